import ArgumentParser
import Server

/// The options of `parley serve` that tune the server. Each is declared once here and mapped once
/// (in `configuration()`) onto the `ServerConfiguration` field it sets; its default is that
/// field's own, written once in ServerConfiguration.swift, and every `--flag` has a `PARLEY_FLAG`
/// environment twin that a flag on the command line overrides.
struct ServerOptions: ParsableArguments {
    private static let defaults = ServerConfiguration()

    @Option(help: "Address to listen on (PARLEY_HOST; default \(defaults.host)).")
    var host: String?

    @Option(help: "Port to listen on; 0 picks a free one (PARLEY_PORT; default \(defaults.port)).")
    var port: Int?

    @Option(help: "Event loops, one thread each (PARLEY_LOOPS; default one per core, \(defaults.loops) here).")
    var loops: Int?

    @Option(help: "Largest WebSocket message in bytes; larger ones close with 1009 (PARLEY_MAX_MESSAGE_BYTES; default \(defaults.maxMessageBytes)).")
    var maxMessageBytes: Int?

    @Option(help: "Most WebSocket sessions; past it upgrades get 503, /healthz and /metrics still answer (PARLEY_MAX_CONNECTIONS; default \(defaults.maxConnections)).")
    var maxConnections: Int?

    @Option(help: "Bytes queued for a client that does not read before it is dropped (PARLEY_MAX_OUTBOUND_BYTES; default \(defaults.maxOutboundBytes)).")
    var maxOutboundBytes: Int?

    @Option(help: "Largest HTTP request body in bytes; larger gets 413 (PARLEY_MAX_BODY_BYTES; default \(defaults.maxBodyBytes)).")
    var maxBodyBytes: Int?

    @Option(help: "Seconds to send a complete request head; also the HTTP keep-alive idle time (PARLEY_HANDSHAKE_TIMEOUT; default \(defaults.handshakeTimeout)).")
    var handshakeTimeout: Double?

    @Option(help: "Seconds of WebSocket silence before a server ping (PARLEY_IDLE_TIMEOUT; default \(defaults.idleTimeout)).")
    var idleTimeout: Double?

    @Option(help: "Seconds to wait for traffic after that ping before dropping (PARLEY_PING_TIMEOUT; default \(defaults.pingTimeout)).")
    var pingTimeout: Double?

    @Option(help: "Seconds to wait for the peer's side of a close (PARLEY_CLOSE_TIMEOUT; default \(defaults.closeTimeout)).")
    var closeTimeout: Double?

    @Option(name: [.customLong("drain-seconds"), .customLong("shutdown-timeout")],
            help: "Seconds a drain (SIGTERM) gives replies in flight before the sessions left are closed (PARLEY_DRAIN_SECONDS; default \(defaults.shutdownTimeout)).")
    var shutdownTimeout: Double?

    @Option(name: .customLong("tls-cert"), help: ArgumentHelp("PEM certificate chain; with --tls-key the port serves HTTPS and wss only, and SIGHUP reloads both (PARLEY_TLS_CERT).", valueName: "file"))
    var tlsCert: String?

    @Option(name: .customLong("tls-key"), help: ArgumentHelp("PEM private key for --tls-cert (PARLEY_TLS_KEY).", valueName: "file"))
    var tlsKey: String?

    @Option(name: .customLong("tls-handshake-timeout"), help: "Seconds a client has to complete the TLS handshake (PARLEY_TLS_HANDSHAKE_TIMEOUT; default \(defaults.tlsHandshakeTimeout)).")
    var tlsHandshakeTimeout: Double?

    @Option(name: .customLong("max-tls-handshakes"), help: "TLS handshakes in progress at once; past it new connections are closed (PARLEY_MAX_TLS_HANDSHAKES; default \(defaults.maxTLSHandshakes)).")
    var maxTLSHandshakes: Int?

    @Option(name: .customLong("max-connections-per-ip"), help: "Connections one client address may hold open; past it, 429 with Retry-After (PARLEY_MAX_CONNECTIONS_PER_IP; default: no limit).")
    var maxConnectionsPerIP: Int?

    @Option(name: .customLong("max-connects-per-second-per-ip"), help: "Connections one client address may open a second, with a one-second burst; past it, 429 (PARLEY_MAX_CONNECTS_PER_SECOND_PER_IP; default: no limit).")
    var maxConnectsPerSecondPerIP: Int?

    /// The configuration these options (and their environment twins) describe.
    func configuration() throws -> ServerConfiguration {
        var c = ServerConfiguration()
        try set(&c, \.host, host, "PARLEY_HOST")
        try set(&c, \.port, port, "PARLEY_PORT")
        try set(&c, \.loops, loops, "PARLEY_LOOPS")
        try set(&c, \.maxMessageBytes, maxMessageBytes, "PARLEY_MAX_MESSAGE_BYTES")
        try set(&c, \.maxConnections, maxConnections, "PARLEY_MAX_CONNECTIONS")
        try set(&c, \.maxOutboundBytes, maxOutboundBytes, "PARLEY_MAX_OUTBOUND_BYTES")
        try set(&c, \.maxBodyBytes, maxBodyBytes, "PARLEY_MAX_BODY_BYTES")
        try set(&c, \.handshakeTimeout, handshakeTimeout, "PARLEY_HANDSHAKE_TIMEOUT")
        try set(&c, \.idleTimeout, idleTimeout, "PARLEY_IDLE_TIMEOUT")
        try set(&c, \.pingTimeout, pingTimeout, "PARLEY_PING_TIMEOUT")
        try set(&c, \.closeTimeout, closeTimeout, "PARLEY_CLOSE_TIMEOUT")
        try set(&c, \.shutdownTimeout, shutdownTimeout, "PARLEY_DRAIN_SECONDS")
        try set(&c, \.tlsCertificateFile, tlsCert, "PARLEY_TLS_CERT")
        try set(&c, \.tlsKeyFile, tlsKey, "PARLEY_TLS_KEY")
        try set(&c, \.tlsHandshakeTimeout, tlsHandshakeTimeout, "PARLEY_TLS_HANDSHAKE_TIMEOUT")
        try set(&c, \.maxTLSHandshakes, maxTLSHandshakes, "PARLEY_MAX_TLS_HANDSHAKES")
        try set(&c, \.maxConnectionsPerAddress, maxConnectionsPerIP, "PARLEY_MAX_CONNECTIONS_PER_IP")
        try set(&c, \.connectsPerSecondPerAddress, maxConnectsPerSecondPerIP, "PARLEY_MAX_CONNECTS_PER_SECOND_PER_IP")
        return c
    }

    func validate() throws {
        let c = try configuration()
        guard c.servesTLS || (c.tlsCertificateFile == nil && c.tlsKeyFile == nil) else { throw ValidationError("--tls-cert and --tls-key go together") }
        guard c.maxTLSHandshakes >= 1 else { throw ValidationError("--max-tls-handshakes must be at least 1") }
        guard c.tlsHandshakeTimeout > 0 else { throw ValidationError("--tls-handshake-timeout must be positive") }
        guard (0...65535).contains(c.port) else { throw ValidationError("--port must be 0...65535") }
        guard c.loops >= 1 else { throw ValidationError("--loops must be at least 1") }
        guard c.maxMessageBytes >= 125 else { throw ValidationError("--max-message-bytes must be at least 125") }
        guard c.maxConnections >= 1 else { throw ValidationError("--max-connections must be at least 1") }
        guard c.maxOutboundBytes >= 1024 else { throw ValidationError("--max-outbound-bytes must be at least 1024") }
        guard c.maxBodyBytes >= 0 else { throw ValidationError("--max-body-bytes must not be negative") }
        for (name, value) in [("handshake", c.handshakeTimeout), ("idle", c.idleTimeout), ("ping", c.pingTimeout),
                              ("close", c.closeTimeout), ("shutdown", c.shutdownTimeout)] where value <= 0 {
            throw ValidationError("--\(name)-timeout must be positive")
        }
    }

    /// The flag's value, else its environment variable's, else the field keeps its default.
    private func set<T: LosslessStringConvertible>(_ c: inout ServerConfiguration, _ field: WritableKeyPath<ServerConfiguration, T>,
                                                   _ flag: T?, _ variable: String) throws {
        if let flag { return c[keyPath: field] = flag }
        guard let text = Environment.string(variable) else { return }
        guard let value = T(text) else { throw ValidationError("\(variable)=\(text) is not a valid value") }
        c[keyPath: field] = value
    }

    private func set(_ c: inout ServerConfiguration, _ field: WritableKeyPath<ServerConfiguration, String?>, _ flag: String?, _ variable: String) throws {
        if let value = flag ?? Environment.string(variable) { c[keyPath: field] = value }
    }

    /// A limit that is off unless given; it must be at least 1.
    private func set(_ c: inout ServerConfiguration, _ field: WritableKeyPath<ServerConfiguration, Int?>, _ flag: Int?, _ variable: String) throws {
        if let flag { c[keyPath: field] = flag }
        if flag == nil, let text = Environment.string(variable) {
            guard let value = Int(text) else { throw ValidationError("\(variable)=\(text) is not a valid value") }
            c[keyPath: field] = value
        }
        if let value = c[keyPath: field], value < 1 {
            // PARLEY_MAX_CONNECTIONS_PER_IP is --max-connections-per-ip.
            let flag = "--" + String(variable.dropFirst("PARLEY_".count).lowercased().map { $0 == "_" ? "-" : $0 })
            throw ValidationError("\(flag) must be at least 1")
        }
    }
}
