#include "CTLS.h"

void parley_tls_ctx_configure(SSL_CTX *ctx) {
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
}

static const unsigned char http11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};

static int select_http11(SSL *ssl, const unsigned char **out, unsigned char *outlen, const unsigned char *in,
                         unsigned int inlen, void *arg) {
    (void)ssl; (void)arg;
    unsigned char *selected;
    if (SSL_select_next_proto(&selected, outlen, http11, sizeof http11, in, inlen) != OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_NOACK;
    *out = selected;
    return SSL_TLSEXT_ERR_OK;
}

void parley_tls_ctx_configure_server(SSL_CTX *ctx) {
    SSL_CTX_set_alpn_select_cb(ctx, select_http11, NULL);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
    // Read whatever the socket holds in one read(2), not a 5-byte header and then a body per record:
    // a small WebSocket message costs one system call instead of two. The server reads until
    // WANT_READ, and comes back by itself whenever it stops earlier, so nothing waits behind an edge
    // that will not come for bytes OpenSSL already holds.
    SSL_CTX_set_read_ahead(ctx, 1);
    // One ticket, not the default two: it is enough to resume, and each costs an encryption and 255
    // bytes on every handshake.
    SSL_CTX_set_num_tickets(ctx, 1);
}

int parley_tls_offer_http11(SSL *ssl) { return SSL_set_alpn_protos(ssl, http11, sizeof http11) == 0; }

int parley_tls_set_server_name(SSL *ssl, const char *name) { return (int)SSL_set_tlsext_host_name(ssl, name); }

int parley_tls_ctx_set_versions(SSL_CTX *ctx, int minimum, int maximum, int security_level) {
    SSL_CTX_set_security_level(ctx, security_level);
    return SSL_CTX_set_min_proto_version(ctx, minimum) && SSL_CTX_set_max_proto_version(ctx, maximum);
}

// DTLS-SRTP (RFC 5763, RFC 5764) for WebRTC.

// Any certificate is accepted here: WebRTC's certificates are self-signed, and what authenticates
// the peer is its certificate's fingerprint against the one signalled in SDP (RFC 8122 section 5),
// which the endpoint checks once the handshake is done.
static int accept_any_certificate(int preverified, X509_STORE_CTX *store) {
    (void)preverified; (void)store;
    return 1;
}

int parley_dtls_ctx_configure(SSL_CTX *ctx, const char *srtp_profiles) {
    // DTLS 1.2 only: what browsers speak, and OpenSSL 3.0 has no DTLS 1.3.
    if (!SSL_CTX_set_min_proto_version(ctx, DTLS1_2_VERSION) || !SSL_CTX_set_max_proto_version(ctx, DTLS1_2_VERSION))
        return 0;
    // The MTU is set per endpoint (a memory BIO has none to query); no tickets nor session cache (a
    // call's handshake is never resumed); no renegotiation (RFC 8827 section 6.5 leaves no use for it).
    SSL_CTX_set_options(ctx, SSL_OP_NO_QUERY_MTU | SSL_OP_NO_TICKET | SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION
                                 | SSL_OP_CIPHER_SERVER_PREFERENCE);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
    // Both roles ask for the peer's certificate: without one there is no fingerprint to check.
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, accept_any_certificate);
    // SSL_CTX_set_tlsext_use_srtp returns 0 on success.
    return SSL_CTX_set_tlsext_use_srtp(ctx, srtp_profiles) == 0;
}

// The retransmission timer: `initial` microseconds (kept in the SSL's application data), doubled on
// each expiry up to 60 s, as RFC 6347 section 4.2.4.1 has it.
static unsigned int retransmission_timer(SSL *ssl, unsigned int previous_us) {
    if (previous_us == 0) return (unsigned int)(uintptr_t)SSL_get_ex_data(ssl, 0);
    return previous_us >= 30000000u ? 60000000u : previous_us * 2;
}

int parley_dtls_prepare(SSL *ssl, BIO *rbio, BIO *wbio, long mtu, unsigned int initial_timeout_us) {
    // An empty memory BIO reads as "try again", not as end of file.
    BIO_set_mem_eof_return(rbio, -1);
    BIO_set_mem_eof_return(wbio, -1);
    SSL_set_bio(ssl, rbio, wbio);
    if (!SSL_set_ex_data(ssl, 0, (void *)(uintptr_t)initial_timeout_us)) return 0;
    DTLS_set_timer_cb(ssl, retransmission_timer);
    return SSL_set_mtu(ssl, mtu) > 0;
}

long long parley_dtls_timeout_us(SSL *ssl) {
    struct timeval remaining;
    if (DTLSv1_get_timeout(ssl, &remaining) <= 0) return -1;
    return (long long)remaining.tv_sec * 1000000 + remaining.tv_usec;
}

int parley_dtls_handle_timeout(SSL *ssl) { return (int)DTLSv1_handle_timeout(ssl); }

long parley_bio_contents(BIO *bio, const unsigned char **data) {
    char *start = NULL;
    long length = BIO_get_mem_data(bio, &start);
    *data = (const unsigned char *)start;
    return length;
}

int parley_bio_reset(BIO *bio) { return (int)BIO_reset(bio); }
