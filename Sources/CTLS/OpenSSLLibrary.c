// OpenSSL (libssl and the libcrypto under it), opened with dlopen when first used rather than
// linked: linked, a server that never speaks TLS nor signs anything still paid for it at start,
// 1,692 kB resident of relocations, symbol tables and code (docs/benchmarks.md, "Start-up
// memory"). Each function Parley calls is defined here under OpenSSL's own name, so the Swift in
// Sources/TLS calls it as before: the first call opens the library (once, on any thread) and every
// call goes through the table of its functions. The headers are compiled against as before, so a
// forwarder whose prototype drifts from OpenSSL's is a compile error.
#include "CTLS.h"
#include <dlfcn.h>
#include <malloc.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/srtp.h>
#include <openssl/x509.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

_Static_assert(OPENSSL_VERSION_MAJOR == 3, "the soname below is OpenSSL 3's");
static const char soname[] = "libssl.so.3";

// Every OpenSSL function Parley calls, once (a new one is a link error until it is listed here and
// given a forwarder below).
#define OPENSSL_FUNCTIONS(F) \
    F(ASN1_INTEGER_set_uint64) F(ASN1_TIME_diff) F(BIO_ctrl) F(BIO_ctrl_pending) F(BIO_free) F(BIO_new) \
    F(BIO_new_mem_buf) F(BIO_read) F(BIO_s_mem) F(BIO_write) F(CRYPTO_memcmp) F(CRYPTO_set_mem_functions) \
    F(DTLS_client_method) F(DTLS_get_data_mtu) F(DTLS_server_method) F(DTLS_set_timer_cb) F(ERR_clear_error) \
    F(ERR_get_error) F(ERR_reason_error_string) F(EVP_Digest) F(EVP_DigestSign) F(EVP_DigestSignInit) \
    F(EVP_DigestVerify) F(EVP_DigestVerifyInit) F(EVP_MD_CTX_free) F(EVP_MD_CTX_new) F(EVP_PKEY_CTX_free) \
    F(EVP_PKEY_CTX_new_id) F(EVP_PKEY_CTX_set_ec_paramgen_curve_nid) F(EVP_PKEY_CTX_set_rsa_keygen_bits) \
    F(EVP_PKEY_free) F(EVP_PKEY_get_base_id) F(EVP_PKEY_get_bits) F(EVP_PKEY_get_group_name) F(EVP_PKEY_keygen) \
    F(EVP_PKEY_keygen_init) F(EVP_md5) F(EVP_sha1) F(EVP_sha256) F(HMAC) F(PEM_read_bio_PUBKEY) F(PEM_read_bio_PrivateKey) \
    F(PEM_write_bio_PUBKEY) F(PEM_write_bio_PrivateKey) F(RAND_bytes) F(SSL_CTX_check_private_key) \
    F(SSL_CTX_ctrl) F(SSL_CTX_free) F(SSL_CTX_get0_certificate) F(SSL_CTX_load_verify_locations) F(SSL_CTX_new) \
    F(SSL_CTX_set_alpn_select_cb) F(SSL_CTX_set_cipher_list) F(SSL_CTX_set_default_verify_paths) \
    F(SSL_CTX_set_num_tickets) F(SSL_CTX_set_options) F(SSL_CTX_set_security_level) \
    F(SSL_CTX_set_tlsext_use_srtp) F(SSL_CTX_set_verify) F(SSL_CTX_use_PrivateKey) \
    F(SSL_CTX_use_PrivateKey_file) F(SSL_CTX_use_certificate) F(SSL_CTX_use_certificate_chain_file) \
    F(SSL_alloc_buffers) F(SSL_ctrl) F(SSL_do_handshake) F(SSL_export_keying_material) F(SSL_free) \
    F(SSL_free_buffers) F(SSL_get0_alpn_selected) F(SSL_get0_param) F(SSL_get1_peer_certificate) \
    F(SSL_get_error) F(SSL_get_ex_data) F(SSL_get_selected_srtp_profile) F(SSL_get_verify_result) \
    F(SSL_get_version) F(SSL_new) F(SSL_read_ex) F(SSL_renegotiate) F(SSL_select_next_proto) F(SSL_set1_host) \
    F(SSL_set_accept_state) F(SSL_set_alpn_protos) F(SSL_set_bio) F(SSL_set_connect_state) F(SSL_set_ex_data) \
    F(SSL_set_fd) F(SSL_shutdown) F(SSL_write_ex) F(TLS_client_method) F(TLS_server_method) \
    F(X509_NAME_add_entry_by_txt) F(X509_VERIFY_PARAM_set1_ip_asc) F(X509_digest) F(X509_free) \
    F(X509_get0_notAfter) F(X509_get_serialNumber) F(X509_get_subject_name) F(X509_getm_notAfter) \
    F(X509_getm_notBefore) F(X509_gmtime_adj) F(X509_new) F(X509_set_issuer_name) F(X509_set_pubkey) \
    F(X509_set_version) F(X509_sign) F(X509_verify_cert_error_string)

static struct {
#define MEMBER(name) __typeof__(name) *name;
    OPENSSL_FUNCTIONS(MEMBER)
#undef MEMBER
} table;

// Allocation counting: heap bytes OpenSSL holds, net of frees, on the calling thread.
static _Thread_local long heap_bytes;

static void *counting_malloc(size_t size, const char *file, int line) {
    (void)file; (void)line;
    void *p = malloc(size);
    if (p) heap_bytes += (long)malloc_usable_size(p);
    return p;
}

static void *counting_realloc(void *old, size_t size, const char *file, int line) {
    (void)file; (void)line;
    long before = old ? (long)malloc_usable_size(old) : 0;
    void *p = realloc(old, size);
    if (p) heap_bytes += (long)malloc_usable_size(p) - before;
    return p;
}

static void counting_free(void *p, const char *file, int line) {
    (void)file; (void)line;
    if (!p) return;
    heap_bytes -= (long)malloc_usable_size(p);
    free(p);
}

long parley_tls_thread_heap_bytes(void) { return heap_bytes; }

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int loaded;
static char why[256];

static void load(void) {
    // RTLD_NOW: a library missing a symbol fails here, with the reason, not at a first call.
    // RTLD_LOCAL: its names stay out of the process's namespace.
    void *library = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        snprintf(why, sizeof why, "%s", dlerror());
        return;
    }
    // dlsym on the handle also searches libcrypto, libssl's dependency.
#define RESOLVE(name)                                                         \
    if (!(table.name = (__typeof__(name) *)dlsym(library, #name))) {          \
        snprintf(why, sizeof why, "%s has no %s", soname, #name);             \
        dlclose(library);                                                     \
        return;                                                               \
    }
    OPENSSL_FUNCTIONS(RESOLVE)
#undef RESOLVE
    // Before OpenSSL's first allocation, which is still to come: it refuses new hooks after that.
    table.CRYPTO_set_mem_functions(counting_malloc, counting_realloc, counting_free);
    __atomic_store_n(&loaded, 1, __ATOMIC_RELEASE);
}

int parley_openssl_load(char *error, size_t capacity) {
    pthread_once(&once, load);
    if (__atomic_load_n(&loaded, __ATOMIC_ACQUIRE)) return 0;
    snprintf(error, capacity, "%s", why);
    return -1;
}

// The table, the library opened first if it is not yet. The Swift callers open it with
// parley_openssl_load where a failure can be said (a server's TLS context, a signing key); a
// forwarder reached before that, with no library to be had, can only stop the process, and says why.
static inline __typeof__(table) *openssl(void) {
    if (__builtin_expect(!__atomic_load_n(&loaded, __ATOMIC_ACQUIRE), 0)) {
        char error[sizeof why];
        if (parley_openssl_load(error, sizeof error) != 0) {
            fprintf(stderr, "parley: OpenSSL (%s) cannot be loaded: %s\n", soname, error);
            abort();
        }
    }
    return &table;
}

// The forwarders, in the list's order.
int ASN1_INTEGER_set_uint64(ASN1_INTEGER *a, uint64_t r) { return openssl()->ASN1_INTEGER_set_uint64(a, r); }
int ASN1_TIME_diff(int *pday, int *psec, const ASN1_TIME *from, const ASN1_TIME *to) { return openssl()->ASN1_TIME_diff(pday, psec, from, to); }
long BIO_ctrl(BIO *bp, int cmd, long larg, void *parg) { return openssl()->BIO_ctrl(bp, cmd, larg, parg); }
size_t BIO_ctrl_pending(BIO *b) { return openssl()->BIO_ctrl_pending(b); }
int BIO_free(BIO *a) { return openssl()->BIO_free(a); }
BIO *BIO_new(const BIO_METHOD *type) { return openssl()->BIO_new(type); }
BIO *BIO_new_mem_buf(const void *buf, int len) { return openssl()->BIO_new_mem_buf(buf, len); }
int BIO_read(BIO *b, void *data, int dlen) { return openssl()->BIO_read(b, data, dlen); }
const BIO_METHOD *BIO_s_mem(void) { return openssl()->BIO_s_mem(); }
int BIO_write(BIO *b, const void *data, int dlen) { return openssl()->BIO_write(b, data, dlen); }
int CRYPTO_memcmp(const void *in_a, const void *in_b, size_t len) { return openssl()->CRYPTO_memcmp(in_a, in_b, len); }
int CRYPTO_set_mem_functions(CRYPTO_malloc_fn malloc_fn, CRYPTO_realloc_fn realloc_fn, CRYPTO_free_fn free_fn) { return openssl()->CRYPTO_set_mem_functions(malloc_fn, realloc_fn, free_fn); }
const SSL_METHOD *DTLS_client_method(void) { return openssl()->DTLS_client_method(); }
size_t DTLS_get_data_mtu(const SSL *s) { return openssl()->DTLS_get_data_mtu(s); }
const SSL_METHOD *DTLS_server_method(void) { return openssl()->DTLS_server_method(); }
void DTLS_set_timer_cb(SSL *s, DTLS_timer_cb cb) { openssl()->DTLS_set_timer_cb(s, cb); }
void ERR_clear_error(void) { openssl()->ERR_clear_error(); }
unsigned long ERR_get_error(void) { return openssl()->ERR_get_error(); }
const char *ERR_reason_error_string(unsigned long e) { return openssl()->ERR_reason_error_string(e); }
int EVP_Digest(const void *data, size_t count, unsigned char *md, unsigned int *size, const EVP_MD *type, ENGINE *impl) { return openssl()->EVP_Digest(data, count, md, size, type, impl); }
int EVP_DigestSign(EVP_MD_CTX *ctx, unsigned char *sigret, size_t *siglen, const unsigned char *tbs, size_t tbslen) { return openssl()->EVP_DigestSign(ctx, sigret, siglen, tbs, tbslen); }
int EVP_DigestSignInit(EVP_MD_CTX *ctx, EVP_PKEY_CTX **pctx, const EVP_MD *type, ENGINE *e, EVP_PKEY *pkey) { return openssl()->EVP_DigestSignInit(ctx, pctx, type, e, pkey); }
int EVP_DigestVerify(EVP_MD_CTX *ctx, const unsigned char *sigret, size_t siglen, const unsigned char *tbs, size_t tbslen) { return openssl()->EVP_DigestVerify(ctx, sigret, siglen, tbs, tbslen); }
int EVP_DigestVerifyInit(EVP_MD_CTX *ctx, EVP_PKEY_CTX **pctx, const EVP_MD *type, ENGINE *e, EVP_PKEY *pkey) { return openssl()->EVP_DigestVerifyInit(ctx, pctx, type, e, pkey); }
void EVP_MD_CTX_free(EVP_MD_CTX *ctx) { openssl()->EVP_MD_CTX_free(ctx); }
EVP_MD_CTX *EVP_MD_CTX_new(void) { return openssl()->EVP_MD_CTX_new(); }
void EVP_PKEY_CTX_free(EVP_PKEY_CTX *ctx) { openssl()->EVP_PKEY_CTX_free(ctx); }
EVP_PKEY_CTX *EVP_PKEY_CTX_new_id(int id, ENGINE *e) { return openssl()->EVP_PKEY_CTX_new_id(id, e); }
int EVP_PKEY_CTX_set_ec_paramgen_curve_nid(EVP_PKEY_CTX *ctx, int nid) { return openssl()->EVP_PKEY_CTX_set_ec_paramgen_curve_nid(ctx, nid); }
int EVP_PKEY_CTX_set_rsa_keygen_bits(EVP_PKEY_CTX *ctx, int bits) { return openssl()->EVP_PKEY_CTX_set_rsa_keygen_bits(ctx, bits); }
void EVP_PKEY_free(EVP_PKEY *pkey) { openssl()->EVP_PKEY_free(pkey); }
int EVP_PKEY_get_base_id(const EVP_PKEY *pkey) { return openssl()->EVP_PKEY_get_base_id(pkey); }
int EVP_PKEY_get_bits(const EVP_PKEY *pkey) { return openssl()->EVP_PKEY_get_bits(pkey); }
int EVP_PKEY_get_group_name(const EVP_PKEY *pkey, char *name, size_t name_sz, size_t *gname_len) { return openssl()->EVP_PKEY_get_group_name(pkey, name, name_sz, gname_len); }
int EVP_PKEY_keygen(EVP_PKEY_CTX *ctx, EVP_PKEY **ppkey) { return openssl()->EVP_PKEY_keygen(ctx, ppkey); }
int EVP_PKEY_keygen_init(EVP_PKEY_CTX *ctx) { return openssl()->EVP_PKEY_keygen_init(ctx); }
const EVP_MD *EVP_md5(void) { return openssl()->EVP_md5(); }
const EVP_MD *EVP_sha1(void) { return openssl()->EVP_sha1(); }
const EVP_MD *EVP_sha256(void) { return openssl()->EVP_sha256(); }
unsigned char *HMAC(const EVP_MD *evp_md, const void *key, int key_len, const unsigned char *data, size_t data_len, unsigned char *md, unsigned int *md_len) { return openssl()->HMAC(evp_md, key, key_len, data, data_len, md, md_len); }
EVP_PKEY *PEM_read_bio_PUBKEY(BIO *out, EVP_PKEY **x, pem_password_cb *cb, void *u) { return openssl()->PEM_read_bio_PUBKEY(out, x, cb, u); }
EVP_PKEY *PEM_read_bio_PrivateKey(BIO *out, EVP_PKEY **x, pem_password_cb *cb, void *u) { return openssl()->PEM_read_bio_PrivateKey(out, x, cb, u); }
int PEM_write_bio_PUBKEY(BIO *out, const EVP_PKEY *x) { return openssl()->PEM_write_bio_PUBKEY(out, x); }
int PEM_write_bio_PrivateKey(BIO *out, const EVP_PKEY *x, const EVP_CIPHER *enc, const unsigned char *kstr, int klen, pem_password_cb *cb, void *u) { return openssl()->PEM_write_bio_PrivateKey(out, x, enc, kstr, klen, cb, u); }
int RAND_bytes(unsigned char *buf, int num) { return openssl()->RAND_bytes(buf, num); }
int SSL_CTX_check_private_key(const SSL_CTX *ctx) { return openssl()->SSL_CTX_check_private_key(ctx); }
long SSL_CTX_ctrl(SSL_CTX *ctx, int cmd, long larg, void *parg) { return openssl()->SSL_CTX_ctrl(ctx, cmd, larg, parg); }
void SSL_CTX_free(SSL_CTX *p0) { openssl()->SSL_CTX_free(p0); }
X509 *SSL_CTX_get0_certificate(const SSL_CTX *ctx) { return openssl()->SSL_CTX_get0_certificate(ctx); }
int SSL_CTX_load_verify_locations(SSL_CTX *ctx, const char *CAfile, const char *CApath) { return openssl()->SSL_CTX_load_verify_locations(ctx, CAfile, CApath); }
SSL_CTX *SSL_CTX_new(const SSL_METHOD *meth) { return openssl()->SSL_CTX_new(meth); }
void SSL_CTX_set_alpn_select_cb(SSL_CTX *ctx, SSL_CTX_alpn_select_cb_func cb, void *arg) { openssl()->SSL_CTX_set_alpn_select_cb(ctx, cb, arg); }
int SSL_CTX_set_cipher_list(SSL_CTX *p0, const char *str) { return openssl()->SSL_CTX_set_cipher_list(p0, str); }
int SSL_CTX_set_default_verify_paths(SSL_CTX *ctx) { return openssl()->SSL_CTX_set_default_verify_paths(ctx); }
int SSL_CTX_set_num_tickets(SSL_CTX *ctx, size_t num_tickets) { return openssl()->SSL_CTX_set_num_tickets(ctx, num_tickets); }
uint64_t SSL_CTX_set_options(SSL_CTX *ctx, uint64_t op) { return openssl()->SSL_CTX_set_options(ctx, op); }
void SSL_CTX_set_security_level(SSL_CTX *ctx, int level) { openssl()->SSL_CTX_set_security_level(ctx, level); }
int SSL_CTX_set_tlsext_use_srtp(SSL_CTX *ctx, const char *profiles) { return openssl()->SSL_CTX_set_tlsext_use_srtp(ctx, profiles); }
void SSL_CTX_set_verify(SSL_CTX *ctx, int mode, SSL_verify_cb callback) { openssl()->SSL_CTX_set_verify(ctx, mode, callback); }
int SSL_CTX_use_PrivateKey(SSL_CTX *ctx, EVP_PKEY *pkey) { return openssl()->SSL_CTX_use_PrivateKey(ctx, pkey); }
int SSL_CTX_use_PrivateKey_file(SSL_CTX *ctx, const char *file, int type) { return openssl()->SSL_CTX_use_PrivateKey_file(ctx, file, type); }
int SSL_CTX_use_certificate(SSL_CTX *ctx, X509 *x) { return openssl()->SSL_CTX_use_certificate(ctx, x); }
int SSL_CTX_use_certificate_chain_file(SSL_CTX *ctx, const char *file) { return openssl()->SSL_CTX_use_certificate_chain_file(ctx, file); }
int SSL_alloc_buffers(SSL *ssl) { return openssl()->SSL_alloc_buffers(ssl); }
long SSL_ctrl(SSL *ssl, int cmd, long larg, void *parg) { return openssl()->SSL_ctrl(ssl, cmd, larg, parg); }
int SSL_do_handshake(SSL *s) { return openssl()->SSL_do_handshake(s); }
int SSL_export_keying_material(SSL *s, unsigned char *out, size_t olen, const char *label, size_t llen, const unsigned char *context, size_t contextlen, int use_context) { return openssl()->SSL_export_keying_material(s, out, olen, label, llen, context, contextlen, use_context); }
void SSL_free(SSL *ssl) { openssl()->SSL_free(ssl); }
int SSL_free_buffers(SSL *ssl) { return openssl()->SSL_free_buffers(ssl); }
void SSL_get0_alpn_selected(const SSL *ssl, const unsigned char **data, unsigned int *len) { openssl()->SSL_get0_alpn_selected(ssl, data, len); }
X509_VERIFY_PARAM *SSL_get0_param(SSL *ssl) { return openssl()->SSL_get0_param(ssl); }
X509 *SSL_get1_peer_certificate(const SSL *s) { return openssl()->SSL_get1_peer_certificate(s); }
int SSL_get_error(const SSL *s, int ret_code) { return openssl()->SSL_get_error(s, ret_code); }
void *SSL_get_ex_data(const SSL *ssl, int idx) { return openssl()->SSL_get_ex_data(ssl, idx); }
SRTP_PROTECTION_PROFILE *SSL_get_selected_srtp_profile(SSL *s) { return openssl()->SSL_get_selected_srtp_profile(s); }
long SSL_get_verify_result(const SSL *ssl) { return openssl()->SSL_get_verify_result(ssl); }
const char *SSL_get_version(const SSL *s) { return openssl()->SSL_get_version(s); }
SSL *SSL_new(SSL_CTX *ctx) { return openssl()->SSL_new(ctx); }
int SSL_read_ex(SSL *ssl, void *buf, size_t num, size_t *readbytes) { return openssl()->SSL_read_ex(ssl, buf, num, readbytes); }
int SSL_renegotiate(SSL *s) { return openssl()->SSL_renegotiate(s); }
int SSL_select_next_proto(unsigned char **out, unsigned char *outlen, const unsigned char *in, unsigned int inlen, const unsigned char *client, unsigned int client_len) { return openssl()->SSL_select_next_proto(out, outlen, in, inlen, client, client_len); }
int SSL_set1_host(SSL *s, const char *hostname) { return openssl()->SSL_set1_host(s, hostname); }
void SSL_set_accept_state(SSL *s) { openssl()->SSL_set_accept_state(s); }
int SSL_set_alpn_protos(SSL *ssl, const unsigned char *protos, unsigned int protos_len) { return openssl()->SSL_set_alpn_protos(ssl, protos, protos_len); }
void SSL_set_bio(SSL *s, BIO *rbio, BIO *wbio) { openssl()->SSL_set_bio(s, rbio, wbio); }
void SSL_set_connect_state(SSL *s) { openssl()->SSL_set_connect_state(s); }
int SSL_set_ex_data(SSL *ssl, int idx, void *data) { return openssl()->SSL_set_ex_data(ssl, idx, data); }
int SSL_set_fd(SSL *s, int fd) { return openssl()->SSL_set_fd(s, fd); }
int SSL_shutdown(SSL *s) { return openssl()->SSL_shutdown(s); }
int SSL_write_ex(SSL *s, const void *buf, size_t num, size_t *written) { return openssl()->SSL_write_ex(s, buf, num, written); }
const SSL_METHOD *TLS_client_method(void) { return openssl()->TLS_client_method(); }
const SSL_METHOD *TLS_server_method(void) { return openssl()->TLS_server_method(); }
int X509_NAME_add_entry_by_txt(X509_NAME *name, const char *field, int type, const unsigned char *bytes, int len, int loc, int set) { return openssl()->X509_NAME_add_entry_by_txt(name, field, type, bytes, len, loc, set); }
int X509_VERIFY_PARAM_set1_ip_asc(X509_VERIFY_PARAM *param, const char *ipasc) { return openssl()->X509_VERIFY_PARAM_set1_ip_asc(param, ipasc); }
int X509_digest(const X509 *data, const EVP_MD *type, unsigned char *md, unsigned int *len) { return openssl()->X509_digest(data, type, md, len); }
void X509_free(X509 *a) { openssl()->X509_free(a); }
const ASN1_TIME *X509_get0_notAfter(const X509 *x) { return openssl()->X509_get0_notAfter(x); }
ASN1_INTEGER *X509_get_serialNumber(X509 *x) { return openssl()->X509_get_serialNumber(x); }
X509_NAME *X509_get_subject_name(const X509 *a) { return openssl()->X509_get_subject_name(a); }
ASN1_TIME *X509_getm_notAfter(const X509 *x) { return openssl()->X509_getm_notAfter(x); }
ASN1_TIME *X509_getm_notBefore(const X509 *x) { return openssl()->X509_getm_notBefore(x); }
ASN1_TIME *X509_gmtime_adj(ASN1_TIME *s, long adj) { return openssl()->X509_gmtime_adj(s, adj); }
X509 *X509_new(void) { return openssl()->X509_new(); }
int X509_set_issuer_name(X509 *x, const X509_NAME *name) { return openssl()->X509_set_issuer_name(x, name); }
int X509_set_pubkey(X509 *x, EVP_PKEY *pkey) { return openssl()->X509_set_pubkey(x, pkey); }
int X509_set_version(X509 *x, long version) { return openssl()->X509_set_version(x, version); }
int X509_sign(X509 *x, EVP_PKEY *pkey, const EVP_MD *md) { return openssl()->X509_sign(x, pkey, md); }
const char *X509_verify_cert_error_string(long n) { return openssl()->X509_verify_cert_error_string(n); }
