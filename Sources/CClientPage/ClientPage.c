#include "CClientPage.h"

// #embed is C23's; clang takes it in SwiftPM's default C mode, where it warns that it is an
// extension. The files are found relative to this one, and clang names them in the compile's
// dependency file, so SwiftPM rebuilds the page when one of them changes.
#pragma clang diagnostic ignored "-Wc23-extensions"

static const unsigned char html[] = {
#embed "page/index.html"
};
static const unsigned char js[] = {
#embed "page/client.js"
};
static const unsigned char css[] = {
#embed "page/client.css"
};

parley_page_file parley_page_html(void) { return (parley_page_file){ html, sizeof html }; }
parley_page_file parley_page_js(void) { return (parley_page_file){ js, sizeof js }; }
parley_page_file parley_page_css(void) { return (parley_page_file){ css, sizeof css }; }
