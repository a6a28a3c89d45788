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
    /// Connections per client address, when limited.
    let addressLimits: AddressLimits
    /// Connections allowed past `maxConnections` for plain HTTP, so a full server can still be
    /// health-checked and scraped.
    static let httpReserve = 64

    init(configuration: ServerConfiguration, router: Router, tls: TLSCredentials?) {
        self.configuration = configuration
        self.router = router
        self.tls = tls
        addressLimits = AddressLimits(maxOpen: configuration.maxConnectionsPerAddress, perSecond: configuration.connectsPerSecondPerAddress)
    }
}
