internal import COpenSSL
internal import CTLS
import Loop
#if canImport(Glibc)
import Glibc
#endif

/// One TLS session over a non-blocking socket: OpenSSL reads and writes the descriptor itself, and
/// every call reports what it is waiting for, so an edge-triggered loop knows which edge to wait on.
///
/// The rules OpenSSL sets, which callers follow:
/// - a call that answered `wantRead`/`wantWrite` is repeated when that edge comes, and a write is
///   repeated with the same bytes (they may have moved: SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
/// - a read may need the socket writable (a TLS 1.3 key update to answer), and a write readable;
/// - a short read does not mean the socket is drained (a read returns one record at most, and a
///   server session reads ahead into OpenSSL's buffer): read until `wantRead`, and a reader that
///   stops for any other reason must come back without waiting for an edge.
///
/// What OpenSSL allocates for this session is counted in `heapBytes` (see CTLS's allocator hooks).
public final class TLSStream {
    public enum Outcome: Equatable {
        case transferred(Int)
        case wantRead
        case wantWrite
        /// The peer closed: close_notify, or (on the server side) a plain EOF.
        case closed
        case failed(TLSError)
    }

    private let ssl: OpaquePointer
    public let isServer: Bool
    public private(set) var isEstablished = false
    /// Bytes OpenSSL holds for this session: the SSL object, and its buffers while they are in use.
    public private(set) var heapBytes = 0

    /// `serverName`, for a client: the name sent as SNI and checked against the certificate (a DNS
    /// name or an IP address).
    public init(context: TLSContext, fd: Int32, serverName: String? = nil) throws(TLSError) {
        let before = parley_tls_thread_heap_bytes()
        guard let ssl = SSL_new(context.raw) else { throw .fromQueue("SSL_new") }
        self.ssl = ssl
        isServer = context.isServer
        defer { heapBytes += parley_tls_thread_heap_bytes() - before }
        SSL_set_fd(ssl, fd)
        if isServer {
            SSL_set_accept_state(ssl)
            return
        }
        SSL_set_connect_state(ssl)
        _ = parley_tls_offer_http11(ssl)
        guard let serverName else { return }
        if Self.isIPAddress(serverName) {
            X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), serverName)
        } else {
            _ = parley_tls_set_server_name(ssl, serverName)
            SSL_set1_host(ssl, serverName)
        }
    }

    deinit { SSL_free(ssl) }

    /// Moves the handshake on; `.transferred(0)` once it is complete.
    public func handshake() -> Outcome {
        let result = counted { SSL_do_handshake(ssl) }
        guard result == 1 else { return outcome(of: result, during: "TLS handshake") }
        isEstablished = true
        return .transferred(0)
    }

    public func read(into buffer: UnsafeMutableRawBufferPointer) -> Outcome {
        var n = 0
        let result = counted { SSL_read_ex(ssl, buffer.baseAddress, buffer.count, &n) }
        return result == 1 ? .transferred(n) : outcome(of: result, during: "TLS read")
    }

    /// Writes what it can, in whole records; `.transferred` may be short of `bytes.count`.
    public func write(_ bytes: UnsafeRawBufferPointer) -> Outcome {
        var total = 0
        while total < bytes.count {
            var n = 0
            let rest = UnsafeRawBufferPointer(rebasing: bytes[total...])
            let result = counted { SSL_write_ex(ssl, rest.baseAddress, rest.count, &n) }
            guard result == 1 else {
                let status = outcome(of: result, during: "TLS write")
                return total > 0 && (status == .wantWrite || status == .wantRead) ? .transferred(total) : status
            }
            total += n
        }
        return .transferred(total)
    }

    /// Sends close_notify, once, without waiting for the peer's.
    public func shutdown() {
        guard isEstablished else { return }
        if counted({ SSL_shutdown(ssl) }) < 0 { ERR_clear_error() }
    }

    /// Asks for a TLS 1.2 renegotiation and runs it (tests: the server must refuse).
    public func renegotiate() -> Outcome {
        guard SSL_renegotiate(ssl) == 1 else { return .failed(.fromQueue("SSL_renegotiate")) }
        return handshake()
    }

    /// The protocol agreed by ALPN ("http/1.1"), if any.
    public var negotiatedProtocol: String? {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    /// "TLSv1.3", "TLSv1.2".
    public var protocolVersion: String { String(cString: SSL_get_version(ssl)) }

    // MARK: Internals

    @inline(__always)
    private func counted(_ call: () -> Int32) -> Int32 {
        let before = parley_tls_thread_heap_bytes()
        let result = call()
        heapBytes += parley_tls_thread_heap_bytes() - before
        return result
    }

    private func outcome(of result: Int32, during operation: String) -> Outcome {
        let code = SSL_get_error(ssl, result)
        switch code {
        case SSL_ERROR_WANT_READ: return .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        case SSL_ERROR_ZERO_RETURN: return .closed
        case SSL_ERROR_SYSCALL:
            let why = errno
            let queued = TLSError.fromQueue(operation)
            if queued.description != operation { return .failed(queued) }
            return why == 0 ? .closed : .failed(TLSError("\(operation): \(String(cString: strerror(why)))"))
        default:
            let error = TLSError.fromQueue(operation)
            let verify = SSL_get_verify_result(ssl)
            guard verify != X509_V_OK else { return .failed(error) }
            return .failed(TLSError("\(error.description) (\(String(cString: X509_verify_cert_error_string(verify))))"))
        }
    }

    private static func isIPAddress(_ name: String) -> Bool {
        var storage = in6_addr()
        return inet_pton(AF_INET, name, &storage) == 1 || inet_pton(AF_INET6, name, &storage) == 1
    }
}
