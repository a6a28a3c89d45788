// libsrtp2's declarations, and its loading: Sources/TLS/SRTPContext.swift calls libsrtp2's
// functions under their own names (SRTPLibrary.c forwards them to the library opened with dlopen).
#ifndef PARLEY_CSRTP_H
#define PARLEY_CSRTP_H

#include <stddef.h>
#include <srtp2/srtp.h>

// libsrtp2 is opened with dlopen when first used (SRTPLibrary.c). 0 when it is open; -1 with the
// reason in `error` (nul-terminated, at most `capacity` bytes) when it cannot be. Thread-safe; the
// first call decides.
int parley_srtp_load(char *error, size_t capacity);

#endif
