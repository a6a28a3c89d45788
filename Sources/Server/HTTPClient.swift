import CLinux
import Glibc

/// An upstream's address, from an `http://` or `https://` URL.
public struct UpstreamURL: Sendable, Hashable, CustomStringConvertible {
    public let isTLS: Bool
    public let host: String
    public let port: Int
    /// Path and query, at least "/".
    public let path: String

    public init?(_ text: String) {
        let scheme: Substring, rest: Substring
        if text.hasPrefix("http://") { scheme = "http"; rest = text.dropFirst(7) }
        else if text.hasPrefix("https://") { scheme = "https"; rest = text.dropFirst(8) }
        else { return nil }
        let authority = rest.prefix { $0 != "/" && $0 != "?" }
        var pathPart = String(rest.dropFirst(authority.count))
        if pathPart.isEmpty || pathPart.first == "?" { pathPart = "/" + pathPart }
        var host = authority
        var port = scheme == "https" ? 443 : 80
        if host.hasPrefix("[") {  // [IPv6]:port
            guard let close = host.firstIndex(of: "]") else { return nil }
            let after = host[host.index(after: close)...]
            if after.hasPrefix(":") { guard let p = Int(after.dropFirst()) else { return nil }; port = p }
            host = host[host.index(after: host.startIndex)..<close]
        } else if let colon = host.lastIndex(of: ":") {
            guard let p = Int(host[host.index(after: colon)...]) else { return nil }
            port = p
            host = host[..<colon]
        }
        guard !host.isEmpty, (1...65535).contains(port) else { return nil }
        isTLS = scheme == "https"
        self.host = String(host)
        self.port = port
        path = pathPart
    }

    /// The URL with `path` appended to this one's path.
    public func appending(_ suffix: String) -> UpstreamURL {
        let base = path.hasSuffix("/") ? String(path.dropLast()) : path
        return UpstreamURL(isTLS: isTLS, host: host, port: port, path: base + suffix)
    }

    private init(isTLS: Bool, host: String, port: Int, path: String) {
        self.isTLS = isTLS
        self.host = host
        self.port = port
        self.path = path
    }

    var hostHeader: String {
        let name = host.contains(":") ? "[\(host)]" : host
        return port == (isTLS ? 443 : 80) ? name : "\(name):\(port)"
    }

    var poolKey: String { "\(isTLS ? "s" : "")\(host):\(port)" }

    public var description: String { "\(isTLS ? "https" : "http")://\(hostHeader)\(path)" }
}

public struct HTTPClientRequest: Sendable {
    public struct Timeouts: Sendable {
        public var connect: Double = 5
        /// From the request's last byte sent to the response head.
        public var firstByte: Double = 60
        /// Longest silence while the body streams.
        public var idle: Double = 60
        public init() {}
    }

    public var method: String
    public var url: UpstreamURL
    public var headers: [(String, String)]
    public var body: [UInt8]
    public var timeouts = Timeouts()

    public init(method: String, url: UpstreamURL, headers: [(String, String)] = [], body: [UInt8] = []) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }

    func serialized() -> [UInt8] {
        var head = "\(method) \(url.path) HTTP/1.1\r\nHost: \(url.hostHeader)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty || method == "POST" || method == "PUT" { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        return Array(head.utf8) + body
    }
}

public struct HTTPClientResponseHead: Sendable {
    public let status: Int
    public let headers: [(name: String, value: String)]

    public func header(_ name: String) -> String? { headers.first { $0.name.lowercased() == name.lowercased() }?.value }
}

public enum HTTPClientError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The TLS handshake failed: a certificate that does not verify, or no common protocol.
    case tls(String)
    case resolveFailed(String)
    case connectFailed(String)
    case connectTimeout
    case firstByteTimeout
    case idleTimeout
    /// The upstream closed or reset the connection before the response was complete.
    case connectionLost
    case malformedResponse(String)

    public var description: String {
        switch self {
        case .tls(let why): return why
        case .resolveFailed(let host): return "cannot resolve \(host)"
        case .connectFailed(let why): return "cannot connect: \(why)"
        case .connectTimeout: return "connect timed out"
        case .firstByteTimeout: return "no response before the first-byte time-out"
        case .idleTimeout: return "the response stalled past the idle time-out"
        case .connectionLost: return "the upstream closed the connection mid-response"
        case .malformedResponse(let why): return "malformed response: \(why)"
        }
    }
}

/// One request in flight. `cancel()` aborts it upstream (its connection is closed, not reused)
/// and no callback runs afterwards.
public final class HTTPClientCall {
    var onHead: ((HTTPClientResponseHead) -> Void)?
    var onBody: ((UnsafeRawBufferPointer) -> Void)?
    var onEnd: ((Result<Void, HTTPClientError>) -> Void)?
    weak var connection: UpstreamConnection?
    public private(set) var isFinished = false

    init(onHead: @escaping (HTTPClientResponseHead) -> Void, onBody: @escaping (UnsafeRawBufferPointer) -> Void,
         onEnd: @escaping (Result<Void, HTTPClientError>) -> Void) {
        self.onHead = onHead
        self.onBody = onBody
        self.onEnd = onEnd
    }

    public func cancel() {
        guard !isFinished else { return }
        finishQuietly()
        connection?.abandon()
    }

    func finish(_ result: Result<Void, HTTPClientError>) {
        guard !isFinished else { return }
        let callback = onEnd
        finishQuietly()
        callback?(result)
    }

    private func finishQuietly() {
        isFinished = true
        onHead = nil
        onBody = nil
        onEnd = nil
    }
}

/// The HTTP/1.1 client of one event loop: non-blocking connects, a keep-alive pool per upstream,
/// Content-Length, chunked and close-delimited bodies, time-outs. No thread per request: every
/// callback runs on the loop. https goes through OpenSSL on the same loop, verified against the
/// system's trust store and `ServerConfiguration.upstreamCAFile`. (Name resolution is a blocking
/// getaddrinfo, cached per host: upstreams are few and long-lived.)
public final class HTTPClient {
    /// Idle connections kept per upstream on each loop: enough for the concurrency a loop reaches
    /// (hundreds of replies streaming at once at 10,000 sessions), so bursts do not churn
    /// connections. An idle connection costs a descriptor and a few hundred bytes.
    static let maxIdlePerUpstream = 1024

    unowned(unsafe) let loop: EventLoop
    private var idle: [String: [UpstreamConnection]] = [:]
    private var addresses: [String: [UInt8]] = [:]

    init(loop: EventLoop) {
        self.loop = loop
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
            let connection = try loop.openUpstream(address: address, key: request.url.poolKey,
                                                   tlsServerName: request.url.isTLS ? request.url.host : nil, client: self)
            connection.start(call, request)
        } catch {
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

    /// The upstream's socket address as bytes of a sockaddr_storage, resolved once per host.
    private func resolve(_ url: UpstreamURL) throws(HTTPClientError) -> [UInt8] {
        if let cached = addresses[url.poolKey] { return cached }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(url.host, String(url.port), &hints, &list) == 0, let info = list else { throw .resolveFailed(url.host) }
        defer { freeaddrinfo(list) }
        let bytes = Array(UnsafeRawBufferPointer(start: info.pointee.ai_addr, count: Int(info.pointee.ai_addrlen)))
        addresses[url.poolKey] = bytes
        return bytes
    }
}
