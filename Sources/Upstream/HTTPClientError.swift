/// Why an upstream request failed.
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
