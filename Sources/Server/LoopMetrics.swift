import Loop
import Metrics

/// Close codes get a fixed set of labels so the metric's cardinality stays bounded.
struct CloseLabel: MetricLabel {
    static let labelName = "code"
    /// 1000...1015, then "other" for library/application codes, then "none" for plain HTTP.
    static let count = 18
    let index: Int

    init(index: Int) { self.index = index }

    init(_ code: WebSocketCloseCode?) {
        guard let code else {
            index = 17
            return
        }
        index = (1000...1015).contains(code.rawValue) ? Int(code.rawValue - 1000) : 16
    }

    var labelValue: String {
        switch index {
        case 0..<16: return String(1000 + index)
        case 16: return "other"
        default: return "none"
        }
    }
}

/// An endpoint's name on `parley_connections_open` (`http` for connections not upgraded).
struct EndpointLabel: MetricLabel {
    static let labelName = "endpoint"
    let labelValue: String
}

struct CarrierLabel: MetricLabel {
    static let labelName = "carrier"
    let labelValue: String
}

/// Why an accepted-or-attempted connection was turned away.
enum RefusalReason: Int, CaseIterable, MetricLabel {
    static let labelName = "reason"
    /// accept(2) failed with EMFILE/ENFILE.
    case descriptorLimit
    /// A WebSocket upgrade past `maxConnections` sessions, or any connection past the hard cap.
    case connectionLimit
    /// A TLS connection while `maxTLSHandshakes` handshakes were already in progress.
    case tlsHandshakeLimit
    /// A client address holding `maxConnectionsPerAddress` connections already.
    case addressConnections
    /// A client address opening connections faster than `connectsPerSecondPerAddress`.
    case addressRate
    var labelValue: String { ["descriptor_limit", "connection_limit", "tls_handshake_limit", "address_connections", "address_rate"][rawValue] }
}

/// Why the server dropped a WebSocket connection on its own.
enum DropReason: Int, CaseIterable, MetricLabel {
    static let labelName = "reason"
    /// The client did not read, and its outbound queue passed `maxOutboundBytes` (told with 1008).
    case outboundCap
    /// No pong to our ping within the ping timeout.
    case pingTimeout
    /// Our close (or the flush and linger after it) was not answered in time.
    case closeTimeout
    var labelValue: String { ["outbound_cap", "ping_timeout", "close_timeout"][rawValue] }
}

/// How a TLS handshake ended.
enum TLSHandshakeResult: Int, CaseIterable, MetricLabel {
    static let labelName = "result"
    case established
    /// A protocol or certificate error.
    case failed
    /// Not complete within `tlsHandshakeTimeout`.
    case timedOut
    /// The client left first (or the server shut down).
    case closed
    var labelValue: String { ["ok", "failed", "timeout", "closed"][rawValue] }
}

/// The server's counters on one event loop (the loop's own lag histogram is its handle's).
final class LoopMetrics: Sendable {
    let open: [Counter]
    let accepted = Counter()
    let refused = RefusalReason.allCases.map { _ in Counter() }
    let dropped = DropReason.allCases.map { _ in Counter() }
    let closed = (0..<CloseLabel.count).map { _ in Counter() }
    let messagesIn = Counter()
    let messagesOut = Counter()
    let bytesIn = Counter()
    let bytesOut = Counter()
    /// What the loop's session holders have accounted, by carrier (`MemoryLedger`).
    let ledger: MemoryLedger
    let tlsHandshakes = TLSHandshakeResult.allCases.map { _ in Counter() }
    let tlsHandshakesInProgress = Counter()

    init(endpoints: Int) {
        open = (0..<endpoints).map { _ in Counter() }
        ledger = MemoryLedger(endpoints: endpoints)
    }
}
