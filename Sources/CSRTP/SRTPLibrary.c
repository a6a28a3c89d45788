// libsrtp2, opened with dlopen when first used rather than linked: Debian's libsrtp2.so.1 is built
// on NSS, so linked it mapped libnss3, libnspr4, libnssutil3, libplc4 and libplds4 into every
// server at start, one that never takes a WebRTC call included (docs/benchmarks.md, "Start-up
// memory"). Each function Parley calls is defined here under libsrtp2's own name, so the Swift in
// Sources/WebRTC/SRTP calls it as before: the first call opens the library (once, on any thread)
// and every call goes through the table of its functions. The header is compiled against as
// before, so a forwarder whose prototype drifts from libsrtp2's is a compile error.
#include "CSRTP.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

// libsrtp2's soname since 2.0 (libsrtp 1.x was libsrtp.so.1, with other names: srtp_err_status_t is 2.x's).
static const char soname[] = "libsrtp2.so.1";

// Every libsrtp2 function Parley calls, once (a new one is a link error until it is listed here and
// given a forwarder below).
#define SRTP_FUNCTIONS(F) \
    F(srtp_create) F(srtp_crypto_policy_set_from_profile_for_rtcp) F(srtp_crypto_policy_set_from_profile_for_rtp) \
    F(srtp_dealloc) F(srtp_get_protect_rtcp_trailer_length) F(srtp_get_protect_trailer_length) F(srtp_init) \
    F(srtp_protect) F(srtp_protect_rtcp) F(srtp_unprotect) F(srtp_unprotect_rtcp)

static struct {
#define MEMBER(name) __typeof__(name) *name;
    SRTP_FUNCTIONS(MEMBER)
#undef MEMBER
} table;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int loaded;
static char why[256];

static void load(void) {
    // RTLD_NOW: a library missing a symbol fails here, with the reason, not at a first call.
    // RTLD_LOCAL: its names (and NSS's under it) stay out of the process's namespace.
    void *library = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        snprintf(why, sizeof why, "%s", dlerror());
        return;
    }
#define RESOLVE(name)                                                         \
    if (!(table.name = (__typeof__(name) *)dlsym(library, #name))) {          \
        snprintf(why, sizeof why, "%s has no %s", soname, #name);             \
        dlclose(library);                                                     \
        return;                                                               \
    }
    SRTP_FUNCTIONS(RESOLVE)
#undef RESOLVE
    __atomic_store_n(&loaded, 1, __ATOMIC_RELEASE);
}

int parley_srtp_load(char *error, size_t capacity) {
    pthread_once(&once, load);
    if (__atomic_load_n(&loaded, __ATOMIC_ACQUIRE)) return 0;
    snprintf(error, capacity, "%s", why);
    return -1;
}

// The table, the library opened first if it is not yet. SRTPContext opens it with parley_srtp_load
// before any other call, where a failure can be said (an SRTPError, and the call ends); a forwarder
// reached before that, with no library to be had, can only stop the process, and says why.
static inline __typeof__(table) *srtp(void) {
    if (__builtin_expect(!__atomic_load_n(&loaded, __ATOMIC_ACQUIRE), 0)) {
        char error[sizeof why];
        if (parley_srtp_load(error, sizeof error) != 0) {
            fprintf(stderr, "parley: libsrtp2 (%s) cannot be loaded: %s\n", soname, error);
            abort();
        }
    }
    return &table;
}

// The forwarders, in the list's order.
srtp_err_status_t srtp_create(srtp_t *session, const srtp_policy_t *policy) { return srtp()->srtp_create(session, policy); }
srtp_err_status_t srtp_crypto_policy_set_from_profile_for_rtcp(srtp_crypto_policy_t *policy, srtp_profile_t profile) { return srtp()->srtp_crypto_policy_set_from_profile_for_rtcp(policy, profile); }
srtp_err_status_t srtp_crypto_policy_set_from_profile_for_rtp(srtp_crypto_policy_t *policy, srtp_profile_t profile) { return srtp()->srtp_crypto_policy_set_from_profile_for_rtp(policy, profile); }
srtp_err_status_t srtp_dealloc(srtp_t s) { return srtp()->srtp_dealloc(s); }
srtp_err_status_t srtp_get_protect_rtcp_trailer_length(srtp_t session, uint32_t use_mki, uint32_t mki_index, uint32_t *length) { return srtp()->srtp_get_protect_rtcp_trailer_length(session, use_mki, mki_index, length); }
srtp_err_status_t srtp_get_protect_trailer_length(srtp_t session, uint32_t use_mki, uint32_t mki_index, uint32_t *length) { return srtp()->srtp_get_protect_trailer_length(session, use_mki, mki_index, length); }
srtp_err_status_t srtp_init(void) { return srtp()->srtp_init(); }
srtp_err_status_t srtp_protect(srtp_t ctx, void *rtp_hdr, int *len_ptr) { return srtp()->srtp_protect(ctx, rtp_hdr, len_ptr); }
srtp_err_status_t srtp_protect_rtcp(srtp_t ctx, void *rtcp_hdr, int *pkt_octet_len) { return srtp()->srtp_protect_rtcp(ctx, rtcp_hdr, pkt_octet_len); }
srtp_err_status_t srtp_unprotect(srtp_t ctx, void *srtp_hdr, int *len_ptr) { return srtp()->srtp_unprotect(ctx, srtp_hdr, len_ptr); }
srtp_err_status_t srtp_unprotect_rtcp(srtp_t ctx, void *srtcp_hdr, int *pkt_octet_len) { return srtp()->srtp_unprotect_rtcp(ctx, srtcp_hdr, pkt_octet_len); }
