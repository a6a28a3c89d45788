import ArgumentParser
import Server

/// The options of `parley serve` that tune the server. Each is one `Setting` in `Settings` below
/// (flag, variable, default, range), mapped once (in `configuration()`) onto the
/// `ServerConfiguration` field it sets; its default is that field's own, written once in
/// ServerConfiguration.swift.
struct ServerOptions: ParsableArguments {
    enum Settings {
        private static let defaults = ServerConfiguration()

        static let host = Setting.text("--host", "PARLEY_HOST", default: defaults.host, about: "Address to listen on")
        static let port = Setting.whole("--port", "PARLEY_PORT", default: defaults.port, in: 0...65535, about: "Port to listen on; 0 picks a free one")
        static let loops = Setting.whole("--loops", "PARLEY_LOOPS", default: defaults.loops, shown: "one per core, \(defaults.loops) here", in: 1...,
                                         about: "Event loops, one thread each")
        static let maxMessageBytes = Setting.whole("--max-message-bytes", "PARLEY_MAX_MESSAGE_BYTES", default: defaults.maxMessageBytes, in: 125...,
                                                   about: "Largest WebSocket message in bytes; larger ones close with 1009")
        static let maxConnections = Setting.whole("--max-connections", "PARLEY_MAX_CONNECTIONS", default: defaults.maxConnections, in: 1...,
                                                  about: "Most WebSocket sessions; past it upgrades get 503, /healthz and /metrics still answer")
        static let maxOutboundBytes = Setting.whole("--max-outbound-bytes", "PARLEY_MAX_OUTBOUND_BYTES", default: defaults.maxOutboundBytes, in: 1024...,
                                                    about: "Bytes queued for a client that does not read before it is dropped")
        static let maxBodyBytes = Setting.whole("--max-body-bytes", "PARLEY_MAX_BODY_BYTES", default: defaults.maxBodyBytes, in: 0...,
                                                about: "Largest HTTP request body in bytes; larger gets 413")
        static let handshakeTimeout = Setting.number("--handshake-timeout", "PARLEY_HANDSHAKE_TIMEOUT", default: defaults.handshakeTimeout, in: Above(lower: 0),
                                                     about: "Seconds to send a complete request head; also the HTTP keep-alive idle time")
        static let idleTimeout = Setting.number("--idle-timeout", "PARLEY_IDLE_TIMEOUT", default: defaults.idleTimeout, in: Above(lower: 0),
                                                about: "Seconds of WebSocket silence before a server ping")
        static let pingTimeout = Setting.number("--ping-timeout", "PARLEY_PING_TIMEOUT", default: defaults.pingTimeout, in: Above(lower: 0),
                                                about: "Seconds to wait for traffic after that ping before dropping")
        static let closeTimeout = Setting.number("--close-timeout", "PARLEY_CLOSE_TIMEOUT", default: defaults.closeTimeout, in: Above(lower: 0),
                                                 about: "Seconds to wait for the peer's side of a close")
        static let drainSeconds = Setting.number("--drain-seconds", aliases: ["--shutdown-timeout"], "PARLEY_DRAIN_SECONDS", default: defaults.shutdownTimeout,
                                                 in: Above(lower: 0), about: "Seconds a drain (SIGTERM) gives replies in flight before the sessions left are closed")
        static let tlsCert = Setting.text("--tls-cert", "PARLEY_TLS_CERT", valueName: "file",
                                          about: "PEM certificate chain; with --tls-key the port serves HTTPS and wss only, and SIGHUP reloads both")
        static let tlsKey = Setting.text("--tls-key", "PARLEY_TLS_KEY", valueName: "file", about: "PEM private key for --tls-cert")
        static let tlsHandshakeTimeout = Setting.number("--tls-handshake-timeout", "PARLEY_TLS_HANDSHAKE_TIMEOUT", default: defaults.tlsHandshakeTimeout,
                                                        in: Above(lower: 0), about: "Seconds a client has to complete the TLS handshake")
        static let maxTLSHandshakes = Setting.whole("--max-tls-handshakes", "PARLEY_MAX_TLS_HANDSHAKES", default: defaults.maxTLSHandshakes, in: 1...,
                                                    about: "TLS handshakes in progress at once; past it new connections are closed")
        static let maxConnectionsPerIP = Setting.whole("--max-connections-per-ip", "PARLEY_MAX_CONNECTIONS_PER_IP", shown: "no limit", in: 1...,
                                                       about: "Connections one client address may hold open; past it, 429 with Retry-After")
        static let maxConnectsPerSecondPerIP = Setting.whole("--max-connects-per-second-per-ip", "PARLEY_MAX_CONNECTS_PER_SECOND_PER_IP", shown: "no limit", in: 1...,
                                                             about: "Connections one client address may open a second, with a one-second burst; past it, 429")
    }

    @Option(Settings.host) var host: String?
    @Option(Settings.port) var port: String?
    @Option(Settings.loops) var loops: String?
    @Option(Settings.maxMessageBytes) var maxMessageBytes: String?
    @Option(Settings.maxConnections) var maxConnections: String?
    @Option(Settings.maxOutboundBytes) var maxOutboundBytes: String?
    @Option(Settings.maxBodyBytes) var maxBodyBytes: String?
    @Option(Settings.handshakeTimeout) var handshakeTimeout: String?
    @Option(Settings.idleTimeout) var idleTimeout: String?
    @Option(Settings.pingTimeout) var pingTimeout: String?
    @Option(Settings.closeTimeout) var closeTimeout: String?
    @Option(Settings.drainSeconds) var drainSeconds: String?
    @Option(Settings.tlsCert) var tlsCert: String?
    @Option(Settings.tlsKey) var tlsKey: String?
    @Option(Settings.tlsHandshakeTimeout) var tlsHandshakeTimeout: String?
    @Option(Settings.maxTLSHandshakes) var maxTLSHandshakes: String?
    @Option(Settings.maxConnectionsPerIP) var maxConnectionsPerIP: String?
    @Option(Settings.maxConnectsPerSecondPerIP) var maxConnectsPerSecondPerIP: String?

    /// The configuration these options (and their environment twins) describe.
    func configuration() throws(SettingError) -> ServerConfiguration {
        var c = ServerConfiguration()
        c.host = try Settings.host.read(host)
        c.port = try Settings.port.read(port)
        c.loops = try Settings.loops.read(loops)
        c.maxMessageBytes = try Settings.maxMessageBytes.read(maxMessageBytes)
        c.maxConnections = try Settings.maxConnections.read(maxConnections)
        c.maxOutboundBytes = try Settings.maxOutboundBytes.read(maxOutboundBytes)
        c.maxBodyBytes = try Settings.maxBodyBytes.read(maxBodyBytes)
        c.handshakeTimeout = try Settings.handshakeTimeout.read(handshakeTimeout)
        c.idleTimeout = try Settings.idleTimeout.read(idleTimeout)
        c.pingTimeout = try Settings.pingTimeout.read(pingTimeout)
        c.closeTimeout = try Settings.closeTimeout.read(closeTimeout)
        c.shutdownTimeout = try Settings.drainSeconds.read(drainSeconds)
        c.tlsCertificateFile = try Settings.tlsCert.read(tlsCert)
        c.tlsKeyFile = try Settings.tlsKey.read(tlsKey)
        c.tlsHandshakeTimeout = try Settings.tlsHandshakeTimeout.read(tlsHandshakeTimeout)
        c.maxTLSHandshakes = try Settings.maxTLSHandshakes.read(maxTLSHandshakes)
        c.maxConnectionsPerAddress = try Settings.maxConnectionsPerIP.read(maxConnectionsPerIP)
        c.connectsPerSecondPerAddress = try Settings.maxConnectsPerSecondPerIP.read(maxConnectsPerSecondPerIP)
        if let certificate = c.tlsCertificateFile, c.tlsKeyFile == nil {
            throw Settings.tlsCert.refuse(certificate, "needs --tls-key (PARLEY_TLS_KEY) beside it")
        }
        if let key = c.tlsKeyFile, c.tlsCertificateFile == nil {
            throw Settings.tlsKey.refuse(key, "needs --tls-cert (PARLEY_TLS_CERT) beside it")
        }
        return c
    }
}
