import Media
import Server

/// Where a SIP message came from and how to answer it (RFC 3261 section 18.2.2): over UDP to the
/// source address (RFC 3581), or over TCP on the connection it came on.
struct SIPPeer {
    let address: TransportAddress
    /// The TCP (or TLS) connection, for a message that came on one.
    let connection: StreamConnection?

    static func udp(_ address: TransportAddress) -> SIPPeer { SIPPeer(address: address, connection: nil) }

    /// TCP or TLS: the transaction machines neither retransmit nor wait out timer J or I.
    var isReliable: Bool { connection != nil }
    var transport: String { connection.map { $0.isTLS ? "TLS" : "TCP" } ?? "UDP" }
}
