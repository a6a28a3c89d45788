// OpenSSL's loading, its function-like macros, its callbacks and its allocator hooks: the parts of
// OpenSSL that Swift cannot call directly. Everything else in OpenSSL is called from Sources/TLS.
#ifndef PARLEY_CTLS_H
#define PARLEY_CTLS_H

#include <openssl/ssl.h>

// OpenSSL is opened with dlopen when first used (OpenSSLLibrary.c). 0 when it is open; -1 with the
// reason in `error` (nul-terminated, at most `capacity` bytes) when it cannot be. Thread-safe; the
// first call decides.
int parley_openssl_load(char *error, size_t capacity);

// Heap bytes OpenSSL holds that were allocated, net of frees, on the calling thread. Sampled before
// and after each call on a connection's SSL object, the difference is that connection's TLS memory.
long parley_tls_thread_heap_bytes(void);

// TLS 1.2 minimum; renegotiation and compression off; partial writes and moving write buffers (the
// retry of a write may come from the connection's queue); buffers released while idle.
void parley_tls_ctx_configure(SSL_CTX *ctx);
// Server: answer ALPN with http/1.1 when the client offers it (and carry on without ALPN otherwise);
// no server-side session cache (resumption uses stateless tickets, so idle memory stays flat); a
// client that drops the TCP connection without close_notify is an ordinary EOF, as browsers do it;
// read-ahead on (see CTLS.c).
void parley_tls_ctx_configure_server(SSL_CTX *ctx);
// Client: offer ALPN http/1.1.
int parley_tls_offer_http11(SSL *ssl);
// Client: the server name for SNI (never an IP address; RFC 6066 section 3).
int parley_tls_set_server_name(SSL *ssl, const char *name);

// The protocol versions a context allows, and OpenSSL's security level: for tests that play an old
// or misbehaving client.
int parley_tls_ctx_set_versions(SSL_CTX *ctx, int minimum, int maximum, int security_level);

// DTLS-SRTP. A context: DTLS 1.2 only, no tickets, no renegotiation, the peer's certificate required
// and any accepted (its fingerprint is checked against SDP's by the caller), `use_srtp` with
// `srtp_profiles` (OpenSSL's names, colon-separated). 1 on success.
int parley_dtls_ctx_configure(SSL_CTX *ctx, const char *srtp_profiles);
// An endpoint: `rbio` and `wbio` (memory BIOs, owned by `ssl` from here on) reading as "retry" when
// empty, records sized for `mtu`, and a retransmission timer starting at `initial_timeout_us`. 1 on success.
int parley_dtls_prepare(SSL *ssl, BIO *rbio, BIO *wbio, long mtu, unsigned int initial_timeout_us);
// Microseconds until the retransmission timer expires (0 if it has), or -1 when none is running
// (DTLSv1_get_timeout). The timer runs on OpenSSL's clock.
long long parley_dtls_timeout_us(SSL *ssl);
// Retransmits the last flight if the timer has expired (DTLSv1_handle_timeout): 1 if it did, 0 if
// there was nothing to do, -1 on failure (too many retransmissions).
int parley_dtls_handle_timeout(SSL *ssl);
// A memory BIO's unread bytes (BIO_get_mem_data), and its emptying (BIO_reset).
long parley_bio_contents(BIO *bio, const unsigned char **data);
int parley_bio_reset(BIO *bio);

#endif
