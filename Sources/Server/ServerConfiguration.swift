import Loop
#if canImport(Glibc)
import Glibc
#endif

/// Everything `parley serve` can tune. Defaults are what `make run` uses.
public struct ServerConfiguration: Sendable {
    public var host = "127.0.0.1"
    /// 0 picks a free port (tests); `Server.port` tells which.
    public var port = 8080
    /// Event loops, one thread each; defaults to one per core.
    public var loops = max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
    /// The loops' time: the machine's, or a test's `ManualClock` (one loop then: a manual clock
    /// moves when its one loop is settled).
    public var clock: LoopClock = .monotonic
    /// Largest WebSocket message accepted; larger ones close with 1009.
    public var maxMessageBytes = 1 << 20
    /// WebSocket sessions across all loops; past it upgrades get 503. Plain HTTP keeps a small
    /// reserve beyond it, so a full server still answers /healthz and /metrics.
    public var maxConnections = 100_000
    /// Bytes queued for a client that is not reading, beyond the message being written; past it the
    /// client is closed. Reading from a client pauses at half of it.
    public var maxOutboundBytes = 1 << 20
    public var maxRequestLineBytes = 8192
    public var maxHeadBytes = 16384
    /// Largest request body (Content-Length) accepted; larger ones get 413.
    public var maxBodyBytes = 1 << 20
    /// Seconds a new connection has to send a complete request head (also the keep-alive idle time).
    public var handshakeTimeout = 10.0
    /// Seconds without traffic before the server pings a WebSocket client.
    public var idleTimeout = 60.0
    /// Seconds to wait for any traffic after that ping before dropping the connection.
    public var pingTimeout = 15.0
    /// Seconds to wait for the peer's half of a close handshake.
    public var closeTimeout = 5.0
    /// Seconds a graceful shutdown waits for sessions to close before dropping them.
    public var shutdownTimeout = 10.0

    /// PEM certificate chain (leaf first) and private key. With both, the port serves HTTPS and wss
    /// only; SIGHUP (`Server.reloadCertificates`) loads them again without dropping sessions.
    public var tlsCertificateFile: String?
    public var tlsKeyFile: String?
    /// Seconds a new TLS connection has to complete its handshake; the request head then gets
    /// `handshakeTimeout` of its own.
    public var tlsHandshakeTimeout = 5.0
    /// TLS handshakes in progress at once, across all loops. Past it new connections are closed at
    /// once: a flood of handshakes costs CPU, and must not be able to take all of it.
    public var maxTLSHandshakes = 1024
    /// Runs on each loop's thread as it starts, before it serves anything: for what an upper layer
    /// keeps per loop (the upstream HTTP client and the CA certificates it trusts).
    public var loopStarted: (@Sendable (EventLoop) -> Void)?
    /// The ports each loop also listens on for a protocol of another module (SIP over TCP and
    /// TLS), asked on each loop's thread as it starts, before `loopStarted`: served on the server's
    /// own connections (`StreamProtocol`).
    public var streamPorts: (@Sendable (EventLoop) -> [StreamPort])?

    /// Set in each worker of `parley serve --workers N`: the process publishes its metrics for the
    /// others and answers `/metrics` with the sum over all of them.
    public var workerGroup: WorkerGroupMembership?

    /// Origins (`https://app.example.com`) whose pages may upgrade; an upgrade carrying any other
    /// `Origin` is refused with 403, so a page elsewhere cannot open sessions with a visitor's
    /// browser (cross-site WebSocket hijacking). nil: any; requests without `Origin` (not browsers)
    /// are not affected.
    public var allowedOrigins: [String]?

    /// Connections one client address may hold open at once; past it, 429 (nil: no limit).
    public var maxConnectionsPerAddress: Int?
    /// Connections one client address may open a second (a one-second burst); past it, 429.
    public var connectsPerSecondPerAddress: Int?

    /// Answer `/metrics` on this server's port; false when another listener serves them
    /// (`--metrics-listen`), so that a public port does not show them.
    public var servesMetrics = true

    public var servesTLS: Bool { tlsCertificateFile != nil && tlsKeyFile != nil }

    public init() {}
}
