import ArgumentParser
import Loop
import Server
import Session
#if canImport(Glibc)
import Glibc
#endif

/// Who may connect: API keys, browser origins, and the rule that a server without keys serves
/// only its own machine.
struct AccessOptions: ParsableArguments {
    @Option(name: .customLong("api-keys"), help: ArgumentHelp("A file of API keys, one a line (# comments); sessions must present one (PARLEY_API_KEYS_FILE). PARLEY_API_KEYS (comma-separated) and PARLEY_API_KEY add keys from the environment.", valueName: "file"))
    var apiKeysFile: String?

    @Option(name: .customLong("allowed-origins"), help: ArgumentHelp("Comma-separated origins (https://app.example.com) whose pages may open sessions; an upgrade from any other Origin gets 403. Default: any (PARLEY_ALLOWED_ORIGINS).", valueName: "origins"))
    var allowedOriginsFlag: String?

    @Option(name: .customLong("signing-key-file"), help: ArgumentHelp("A file whose contents (at least 32 bytes) sign client secrets, the same on every node so that any node accepts any node's secrets (PARLEY_SIGNING_KEY holds the key itself). Default: a random key of this process.", valueName: "file"))
    var signingKeyFile: String?

    @Option(help: "Client events (and audio frames) a session may send a second, over a two-second burst; past it the session is closed with 1008 (PARLEY_MAX_EVENTS_PER_SECOND; default 200).")
    var maxEventsPerSecond: Int?

    @Option(help: "Longest session in minutes; then an error event and close 1008 (PARLEY_MAX_SESSION_MINUTES; default 60; 0: no limit).")
    var maxSessionMinutes: Double?

    @Option(name: .customLong("metrics-listen"), help: ArgumentHelp("Serve /metrics (and /healthz) on this address instead of the main port, e.g. 127.0.0.1:9100 (PARLEY_METRICS_LISTEN).", valueName: "host:port"))
    var metricsListenFlag: String?

    @Flag(name: .customLong("insecure-no-auth"), help: "Serve a non-loopback address without API keys (anyone who reaches the port gets a session and spends the model's key).")
    var insecureNoAuth = false

    /// The keys, or nil when none are configured (anyone on the allowed addresses may connect).
    func keys() throws -> APIKeys? {
        var keys: [String] = []
        if let file = apiKeysFile ?? Environment.string("PARLEY_API_KEYS_FILE") {
            guard let bytes = Sys.readFile(file) else { throw ValidationError("--api-keys: cannot read \(file)") }
            let fromFile = APIKeys.parse(String(decoding: bytes, as: UTF8.self))
            guard !fromFile.isEmpty else { throw ValidationError("--api-keys: \(file) holds no key") }
            keys += fromFile
        }
        if let list = Environment.string("PARLEY_API_KEYS") { keys += list.split(separator: ",").map { String($0.trimmingSpaces()) }.filter { !$0.isEmpty } }
        if let one = Environment.string("PARLEY_API_KEY"), !one.isEmpty { keys.append(one) }
        return keys.isEmpty ? nil : APIKeys(keys)
    }

    /// What signs and checks client secrets.
    func signer() throws -> ClientSecretSigner {
        var key: [UInt8]?
        if let file = signingKeyFile {
            guard let bytes = Sys.readFile(file) else { throw ValidationError("--signing-key-file: cannot read \(file)") }
            key = bytes
        } else if let text = Environment.string("PARLEY_SIGNING_KEY") {
            key = Array(text.utf8)
        }
        guard let key else { return .random() }
        guard key.count >= 32 else { throw ValidationError("the signing key must be at least 32 bytes") }
        return ClientSecretSigner(key: key)
    }

    /// `--metrics-listen`'s host and port, if given.
    func metricsListen() throws -> (host: String, port: Int)? {
        guard let text = metricsListenFlag ?? Environment.string("PARLEY_METRICS_LISTEN") else { return nil }
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port) else {
            throw ValidationError("--metrics-listen takes host:port, got \(text)")
        }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return (host, port)
    }

    /// What each session may spend.
    func limits() throws -> SessionLimits {
        var limits = SessionLimits()
        if let n = maxEventsPerSecond ?? Environment.int("PARLEY_MAX_EVENTS_PER_SECOND") {
            guard n >= 1 else { throw ValidationError("--max-events-per-second must be at least 1") }
            limits.eventsPerSecond = n
        }
        if let minutes = maxSessionMinutes ?? Environment.double("PARLEY_MAX_SESSION_MINUTES") {
            guard minutes >= 0 else { throw ValidationError("--max-session-minutes must not be negative") }
            limits.maxSessionSeconds = minutes == 0 ? nil : minutes * 60
        }
        return limits
    }

    var allowedOrigins: [String]? {
        (allowedOriginsFlag ?? Environment.string("PARLEY_ALLOWED_ORIGINS")).map {
            $0.split(separator: ",").map { String($0.trimmingSpaces()) }.filter { !$0.isEmpty }
        }
    }

    /// Safe by default: without keys, only loopback. nil when `host` may be served; else the reason.
    func refusal(host: String, keys: APIKeys?) -> String? {
        guard keys == nil, !insecureNoAuth, !Self.isLoopback(host) else { return nil }
        return "parley: refusing to serve \(host) without API keys: anyone who reaches it would get sessions on your model's account. Give --api-keys FILE (or PARLEY_API_KEY), serve 127.0.0.1, or pass --insecure-no-auth."
    }

    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host == "[::1]" || host.hasPrefix("127.")
    }
}
