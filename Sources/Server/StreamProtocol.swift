import Loop
import TLS

/// A protocol that another module speaks on the server's own connections from their first byte
/// (SIP over TCP and TLS, RFC 3261 section 18.3). The server's `Connection` is its transport, as it
/// is HTTP's and WebSocket's: the accept with its EMFILE rule (`Acceptor`), TLS, the read budget,
/// corked writes with the outbound cap, the loop's timer wheel for its deadline, and the memory
/// account. The protocol gets bytes and its deadline, and answers through its `StreamConnection`.
public protocol StreamProtocol: AnyObject {
    /// Input read from the socket, in order; returns how many bytes were used (the rest is given
    /// again, in front of what comes next).
    func process(_ bytes: UnsafeRawBufferPointer) -> Int
    /// The deadline it set (`StreamConnection.setDeadline`) passed.
    func deadlinePassed()
    /// The connection is gone (either side closed it, or the loop stopped): nothing more is sent.
    func closed()
    /// Heap it holds beyond its object (a framer's buffer), for the loop's memory account.
    var heapBytes: Int { get }
}

/// One of a loop's listening ports for a `StreamProtocol` (`ServerConfiguration.streamPorts`): each
/// loop listens on it with SO_REUSEPORT, as on the HTTP port.
public struct StreamPort {
    public let address: SocketAddress
    /// Set for a port that serves TLS: each connection's session is made from it.
    public let tls: TLSContext?
    /// Connections open on this port and loop at most; past it new ones are closed unread.
    public let maxConnections: Int
    /// A connection's first deadline, from its accept (or its TLS handshake's end); the protocol
    /// moves it on as it pleases (`StreamConnection.setDeadline`).
    public let idleSeconds: Double
    /// The protocol for a new connection, or nil to refuse it (closed before anything is read).
    public let speak: (StreamConnection) -> (any StreamProtocol)?
    /// Given the port's way out once the loop listens on it, for a protocol that also opens
    /// connections (SIP to a trunk over TCP or TLS).
    public var dialer: ((StreamDialer) -> Void)?

    public init(address: SocketAddress, tls: TLSContext?, maxConnections: Int, idleSeconds: Double,
                speak: @escaping (StreamConnection) -> (any StreamProtocol)?) {
        self.address = address
        self.tls = tls
        self.maxConnections = maxConnections
        self.idleSeconds = idleSeconds
        self.speak = speak
    }
}

/// A stream port's way out (RFC 3261 section 18.1.1: a request to a peer over TCP or TLS opens a
/// connection when none is open): connections the loop opens to a peer, counted on the port and
/// served as its accepted ones are, the same transport, TLS (as the client, verifying the peer), cork
/// and deadline. The connect is non-blocking: what is sent before it completes (or before the TLS
/// handshake ends) waits in the connection's queue; a connect that fails closes the connection.
public final class StreamDialer {
    private weak var serving: ServingLoop?
    private let port: Int

    init(serving: ServingLoop, port: Int) {
        self.serving = serving
        self.port = port
    }

    /// A connection to `address` on this loop speaking `speak`'s protocol; TLS with `tls` (a
    /// client context) verifying `serverName`. Nil when it could not be begun (no descriptor, the
    /// port's count or the TLS handshakes' cap reached, or the protocol refused it).
    public func connect(to address: SocketAddress, tls: TLSContext?, serverName: String?,
                        speak: (StreamConnection) -> (any StreamProtocol)?) -> StreamConnection? {
        serving?.dial(port: port, to: address, tls: tls, serverName: serverName, speak: speak)
    }
}

/// What a `StreamProtocol` holds of its connection: send, close, a deadline, and who the peer is.
/// Weak: a transaction may keep it past the connection's end, when sending does nothing.
public final class StreamConnection {
    private weak var connection: Connection?
    public let peer: SocketAddress
    public let isTLS: Bool
    public let loop: EventLoop

    init(_ connection: Connection, peer: SocketAddress, isTLS: Bool) {
        self.connection = connection
        self.peer = peer
        self.isTLS = isTLS
        loop = connection.loop
    }

    public var isOpen: Bool { connection?.isOpen ?? false }

    /// Corked with the loop's other output, as a WebSocket frame is; past the outbound cap the
    /// connection is closed (a peer that does not read).
    public func send(_ bytes: [UInt8]) {
        guard let connection, connection.isOpen else { return }
        bytes.withUnsafeBytes { connection.write($0, UnsafeRawBufferPointer(start: nil, count: 0)) }
    }

    /// Closes once what was sent has gone out.
    public func close() {
        connection?.closeAfterFlush()
    }

    /// Closes now, what is queued dropped (a peer that does not read).
    func closeNow() {
        connection?.close()
    }

    /// The protocol's one deadline, on the loop's timer wheel: `deadlinePassed` after `seconds`.
    public func setDeadline(seconds: Double) {
        guard let connection, connection.isOpen else { return }
        connection.setDeadline(afterTicks: loop.ticks(seconds: seconds))
    }
}

/// A stream protocol as the transport holds it (one reference in `WireProtocol`, so that the
/// connection object does not grow for HTTP and WebSocket): the protocol, its handle and its port.
final class StreamWire {
    let handle: StreamConnection
    let port: Int
    /// The port's `idleSeconds`, in the loop's ticks.
    let idleTicks: UInt32
    var speaker: (any StreamProtocol)?

    init(handle: StreamConnection, port: Int, idleTicks: UInt32) {
        self.handle = handle
        self.port = port
        self.idleTicks = idleTicks
    }
}
