import TLS

/// One client WebSocket, from connect to close. Only state lives here; `ConnectionPool` does the
/// system calls, so that the thousands of held connections cost a small object each.
final class ClientConnection {
    enum Phase {
        /// connect(2) issued; waiting for the socket to become writable.
        case connecting
        /// Connected to a wss:// target; the TLS handshake is under way.
        case tlsHandshaking
        /// Upgrade request sent; reading the response head.
        case handshaking
        case open
        /// Our close frame is out; waiting for the server's.
        case closing
        case closed
    }

    let fd: Int32
    /// Index in the pool, and the epoll token.
    let slot: Int
    /// When connect(2) was called: handshake latency runs from here to the 101.
    let startedAt: UInt64
    let handshake: UpgradeHandshake
    var phase = Phase.connecting
    /// The TLS session of a wss:// connection.
    var tls: TLSStream?
    /// The TLS handshake waits for the socket to be writable (rather than readable).
    var tlsWantsWrite = false

    /// Bytes received but not yet a whole response head or frame.
    var inbound: [UInt8] = []
    /// Bytes the socket would not take yet.
    var outbound: [UInt8] = []
    var wantsWritable = true
    /// A fragmented message being put together (the echo server sends whole ones, but may not always).
    var fragments: [UInt8] = []
    var fragmentOpcode: UInt8 = 0

    /// Echo test: when the message in flight was sent, 0 when none is.
    var sentAt: UInt64 = 0
    /// Echo test with --batch: echoes still to come of the batch sent at `sentAt`.
    var awaiting = 0
    /// The request target of the upgrade when it is not the pool's (`survive` resumes with
    /// `?resume_token=…&last_seq=…`).
    var path: String?
    /// A key offered as the `openai-insecure-api-key.<key>` subprotocol instead of the process's
    /// bearer key (`survive --tenant-key`: some sessions belong to another tenant).
    var offeredKey: String?
    /// The server's close frame, when one came: its code and reason.
    var closeCode: UInt16?
    var closeReason = ""

    init(fd: Int32, slot: Int, startedAt: UInt64, handshake: UpgradeHandshake) {
        self.fd = fd
        self.slot = slot
        self.startedAt = startedAt
        self.handshake = handshake
    }

    var isOpen: Bool { phase == .open }
}
