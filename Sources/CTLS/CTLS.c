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
