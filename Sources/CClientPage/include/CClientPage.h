// The browser page's files (page/index.html, page/client.js, page/client.css), compiled into the
// executable with C23's #embed (ClientPage.c): `parley` serves them wherever it runs from, reading
// nothing from disk. Sources/parley/ClientPage.swift serves them.
#ifndef PARLEY_CCLIENTPAGE_H
#define PARLEY_CCLIENTPAGE_H

#include <stddef.h>

// One file's bytes, as they are in the source tree; static, never freed.
typedef struct {
    const unsigned char *bytes;
    size_t count;
} parley_page_file;

parley_page_file parley_page_html(void);
parley_page_file parley_page_js(void);
parley_page_file parley_page_css(void);

#endif
