import Loop
import Media
import Server
import SIP
import TLS

/// SIP over one TCP (or TLS) connection (RFC 3261 section 18.3), spoken on the server's own
/// connection (`StreamProtocol`: its accept, TLS, corked writes with their cap, timer wheel and
/// memory account): bytes framed into messages by Content-Length (`SIPStreamFramer`), each handed
/// to the loop's agent. Closed after `idleSeconds` with no message, or when the peer closes or
/// sends what cannot be framed.
final class SIPStreamProtocol: StreamProtocol {
    private let connection: StreamConnection
    private let peer: TransportAddress
    private unowned let agent: SIPUserAgent
    private var framer = SIPStreamFramer()
    /// A connection Parley opened (to a trunk): kept open while a call uses it.
    private let opened: Bool

    static let maxPerLoop = 2_000
    static let idleSeconds = 600.0

    /// The port's protocol on `loop`: callers the settings allow, each connection to `agent`.
    static func port(at address: SocketAddress, tls: TLSContext?, agent: SIPUserAgent) -> StreamPort {
        StreamPort(address: address, tls: tls, maxConnections: maxPerLoop, idleSeconds: idleSeconds) { [unowned agent] connection in
            guard let peer = TransportAddress(connection.peer), agent.settings.allows(peer) else {
                // Not a caller we take: the connection is closed before anything is read.
                agent.metrics.refused.add(1, .sourceNotAllowed)
                return nil
            }
            return SIPStreamProtocol(connection: connection, peer: peer, agent: agent, opened: false)
        }
    }

    /// SIP on a connection Parley opened to `peer` (a trunk over TCP or TLS, `StreamDialer`).
    static func dialed(_ connection: StreamConnection, peer: TransportAddress, agent: SIPUserAgent) -> SIPStreamProtocol {
        SIPStreamProtocol(connection: connection, peer: peer, agent: agent, opened: true)
    }

    private init(connection: StreamConnection, peer: TransportAddress, agent: SIPUserAgent, opened: Bool) {
        self.connection = connection
        self.peer = peer
        self.agent = agent
        self.opened = opened
    }

    func process(_ bytes: UnsafeRawBufferPointer) -> Int {
        framer.append(bytes)
        while connection.isOpen {
            let message: SIPMessage?
            do throws(SIPParseError) { message = try framer.next() } catch {
                // A stream that cannot be framed cannot be resynchronised (section 18.3): it ends.
                agent.metrics.messagesDropped.add(1, .malformed)
                connection.close()
                break
            }
            guard let message else { break }
            connection.setDeadline(seconds: Self.idleSeconds)
            agent.received(message, from: SIPPeer(address: peer, connection: connection))
        }
        return bytes.count
    }

    /// Idle: closed, unless it is one Parley opened and a call still uses it (its BYE goes on it).
    func deadlinePassed() {
        guard opened, agent.uses(connection) else { return connection.close() }
        connection.setDeadline(seconds: Self.idleSeconds)
    }

    func closed() { agent.streamClosed(connection) }
    var heapBytes: Int { framer.heapBytes }
}
