import Loop
import TLS

/// The HTTP/1.1 client of one event loop: non-blocking connects, a keep-alive pool per upstream,
/// Content-Length, chunked and close-delimited bodies, time-outs. No thread per request: every
/// callback runs on the loop. https goes through OpenSSL on the same loop, verified against the
/// system's trust store and the CA file the server was started with (`install(on:tls:)`). Name
/// resolution is a blocking getaddrinfo (`Sys.resolve`), cached per host: upstreams are few and
/// long-lived.
public final class HTTPClient {
    /// Idle connections kept per upstream on each loop: enough for the concurrency a loop reaches
    /// (hundreds of replies streaming at once at 10,000 sessions), so bursts do not churn
    /// connections. An idle connection costs a descriptor and a few hundred bytes.
    static let maxIdlePerUpstream = 1024

    unowned(unsafe) let loop: EventLoop
    /// What https upstreams are verified against: the context given at install, or else the
    /// system's trust store, loaded at the first https connection; nil when not even that could be
    /// loaded (https then fails with that reason; http still works).
    var tls: TLSContext? { configured ?? Self.systemTrust }
    private let configured: TLSContext?
    private var idle: [String: [UpstreamConnection]] = [:]
    private var addresses: [String: SocketAddress] = [:]

    init(loop: EventLoop, tls: TLSContext?) {
        self.loop = loop
        configured = tls
    }

    /// The system's trust store only, for clients given no context: made (a static, so once) at
    /// the first https connection, not at start, because making it initialises OpenSSL, which
    /// leaves about 3.4 MB of libcrypto's and libssl's pages resident (docs/benchmarks.md), and a
    /// server with the built-in model or plain-http upstreams never needs it.
    private static let systemTrust = try? TLSContext.client()

    /// Gives `loop` a client that verifies https upstreams against `tls` (the system store plus an
    /// operator's CA file), or against the system store alone, loaded when first needed, when nil;
    /// call when the loop starts, before anything sends.
    public static func install(on loop: EventLoop, tls: TLSContext?) {
        _ = loop.local { HTTPClient(loop: loop, tls: tls) }
    }

    /// Sends `request`; `onHead`, then `onBody` for each piece of the body as it arrives, then
    /// `onEnd` once. Every callback runs later on this loop, never inside `send`.
    @discardableResult
    public func send(_ request: HTTPClientRequest,
                     onHead: @escaping (HTTPClientResponseHead) -> Void = { _ in },
                     onBody: @escaping (UnsafeRawBufferPointer) -> Void = { _ in },
                     onEnd: @escaping (Result<Void, HTTPClientError>) -> Void) -> HTTPClientCall {
        let call = HTTPClientCall(onHead: onHead, onBody: onBody, onEnd: onEnd)
        if let connection = takeIdle(request.url.poolKey) {
            connection.start(call, request)
            return call
        }
        connectFresh(call, request)
        return call
    }

    /// Sends again, on a new connection, a request whose pooled connection the upstream had
    /// closed before answering (see `UpstreamConnection.retryable`). Once: a fresh connection is
    /// never retried.
    func retry(_ call: HTTPClientCall, _ request: HTTPClientRequest) {
        retries += 1
        connectFresh(call, request)
    }

    /// Requests sent again after a pooled connection failed under them; for tests and metrics.
    public private(set) var retries = 0

    private func connectFresh(_ call: HTTPClientCall, _ request: HTTPClientRequest) {
        do {
            let address = try resolve(request.url)
            let connection = try UpstreamConnection.open(address, key: request.url.poolKey,
                                                         tlsServerName: request.url.isTLS ? request.url.host : nil, client: self)
            connection.start(call, request)
        } catch {
            upstreamLog.warning("upstream request failed", metadata: ["upstream": "\(request.url.isTLS ? "https" : "http")://\(request.url.hostHeader)", "error": "\(error)"])
            loop.schedule(after: 0) { call.finish(.failure(error)) }
        }
    }

    func returnToPool(_ connection: UpstreamConnection) {
        var list = idle[connection.key, default: []]
        guard list.count < Self.maxIdlePerUpstream else { return connection.close() }
        list.append(connection)
        idle[connection.key] = list
    }

    func removeFromPool(_ connection: UpstreamConnection) {
        idle[connection.key]?.removeAll { $0 === connection }
    }

    private func takeIdle(_ key: String) -> UpstreamConnection? {
        guard var list = idle[key], let connection = list.popLast() else { return nil }
        idle[key] = list
        return connection
    }

    /// The upstream's socket address, resolved once per host and port.
    private func resolve(_ url: UpstreamURL) throws(HTTPClientError) -> SocketAddress {
        if let cached = addresses[url.poolKey] { return cached }
        guard let address = try? Sys.resolve(host: url.host, port: url.port).first else { throw .resolveFailed(url.host) }
        addresses[url.poolKey] = address
        return address
    }
}

extension EventLoop {
    /// This loop's HTTP client, for requests to upstream servers (LLM and speech APIs).
    public var httpClient: HTTPClient {
        local { HTTPClient(loop: self, tls: nil) }
    }
}
