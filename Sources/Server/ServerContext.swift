import Loop
import Synchronization

/// State every loop of one server reads and none owns.
final class ServerContext: Sendable {
    let configuration: ServerConfiguration
    let router: Router
    /// The certificate clients are served, when the port serves TLS.
    let tls: TLSCredentials?
    /// Open connections across all loops, HTTP and WebSocket.
    let openConnections = Atomic<Int>(0)
    /// Upgraded WebSocket sessions across all loops; `maxConnections` bounds these.
    let openSessions = Atomic<Int>(0)
    /// Set at SIGTERM: `/readyz` answers 503 and upgrades are refused while sessions drain.
    let drain: DrainState
    /// Connections per client address, when limited.
    let addressLimits: AddressLimits
    /// Connections allowed past `maxConnections` for plain HTTP, so a full server can still be
    /// health-checked and scraped.
    static let httpReserve = 64

    init(configuration: ServerConfiguration, router: Router, tls: TLSCredentials?, drain: DrainState) {
        self.drain = drain
        self.configuration = configuration
        self.router = router
        self.tls = tls
        addressLimits = AddressLimits(maxOpen: configuration.maxConnectionsPerAddress, perSecond: configuration.connectsPerSecondPerAddress)
    }
}

/// Whether the server is draining, for `/readyz` and the metrics; shared by every loop.
public final class DrainState: Sendable {
    private let flag = Atomic<Bool>(false)
    public init() {}
    public var isDraining: Bool { flag.load(ordering: .relaxed) }
    func begin() { flag.store(true, ordering: .relaxed) }
}
