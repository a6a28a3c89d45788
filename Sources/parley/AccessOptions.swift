import Access
import ArgumentParser
import Loop
import Server
import Session
import TLS
#if canImport(Glibc)
import Glibc
#endif

/// Who may connect: API keys, JWTs, browser origins, what each tenant and session may spend, and
/// the rule that a server without auth serves only its own machine.
struct AccessOptions: ParsableArguments {
    @Option(name: .customLong("api-keys"), help: ArgumentHelp("A file of API keys, one a line (# comments); sessions must present one (PARLEY_API_KEYS_FILE). PARLEY_API_KEYS (comma-separated) and PARLEY_API_KEY add keys from the environment.", valueName: "file"))
    var apiKeysFile: String?

    @Option(name: .customLong("jwt-secret-file"), help: ArgumentHelp("A file whose contents (at least 32 bytes) check HS256 tokens (PARLEY_JWT_SECRET holds the secret itself).", valueName: "file"))
    var jwtSecretFile: String?

    @Option(name: .customLong("jwt-public-key"), help: ArgumentHelp("A PEM public key checking RS256 (RSA, 2048 bits or more) or ES256 (P-256) tokens, by what the key is; repeat for several (PARLEY_JWT_PUBLIC_KEYS: comma-separated files).", valueName: "file"))
    var jwtPublicKeyFiles: [String] = []

    @Option(name: .customLong("jwt-audience"), help: ArgumentHelp("A token's aud must be or contain this (PARLEY_JWT_AUDIENCE).", valueName: "aud"))
    var jwtAudience: String?

    @Option(name: .customLong("jwt-issuer"), help: ArgumentHelp("A token's iss must be this (PARLEY_JWT_ISSUER).", valueName: "iss"))
    var jwtIssuer: String?

    @Option(help: "Tokens whose signatures are remembered, so that a token presented again is not verified again (its claims always are); 0: verify every time (PARLEY_JWT_CACHE; default 10000).")
    var jwtCache: Int?

    @Option(help: "Sessions a tenant (an API key's, or a token's sub) may hold open in this process; more get 429 (PARLEY_TENANT_MAX_SESSIONS; default: no limit; a token's parley_max_sessions claim sets its own).")
    var tenantMaxSessions: Int?

    @Option(help: "Sessions a tenant may open a minute in this process; more get 429 with Retry-After (PARLEY_TENANT_SESSIONS_PER_MINUTE; default: no limit; claim parley_sessions_per_minute).")
    var tenantSessionsPerMinute: Int?

    @Option(help: "Tenants named in /metrics; the rest add up as tenant=\"_other\" (PARLEY_TENANT_METRICS; default 50).")
    var tenantMetrics: Int?

    @Option(name: .customLong("allowed-origins"), help: ArgumentHelp("Comma-separated origins (https://app.example.com) whose pages may open sessions; an upgrade from any other Origin gets 403. Default: any (PARLEY_ALLOWED_ORIGINS).", valueName: "origins"))
    var allowedOriginsFlag: String?

    @Option(name: .customLong("signing-key-file"), help: ArgumentHelp("A file whose contents (at least 32 bytes) sign client secrets, the same on every node so that any node accepts any node's secrets (PARLEY_SIGNING_KEY holds the key itself). Default: a random key of this process.", valueName: "file"))
    var signingKeyFile: String?

    @Option(help: "Client events (and audio frames) a session may send a second, over a two-second burst; past it the session is closed with 1008 (PARLEY_MAX_EVENTS_PER_SECOND; default 200).")
    var maxEventsPerSecond: Int?

    @Option(help: "Longest session in minutes; then an error event and close 1008 (PARLEY_MAX_SESSION_MINUTES; default 60; 0: no limit).")
    var maxSessionMinutes: Double?

    @Option(help: "Model tokens (input and output) a session may spend; past it, an error event and close 1008 (PARLEY_MAX_SESSION_TOKENS; default: no limit; claim parley_max_session_tokens).")
    var maxSessionTokens: Int?

    @Option(name: .customLong("metrics-listen"), help: ArgumentHelp("Serve /metrics (and /healthz) on this address instead of the main port, e.g. 127.0.0.1:9100 (PARLEY_METRICS_LISTEN).", valueName: "host:port"))
    var metricsListenFlag: String?

    @Flag(name: .customLong("insecure-no-auth"), help: "Serve a non-loopback address without API keys or tokens (anyone who reaches the port gets a session and spends the model's key).")
    var insecureNoAuth = false

    /// Everything the flags and environment say about who may connect.
    func access() throws -> Access {
        var tenantDefaults = TenantLimits()
        tenantDefaults.maxSessions = try positive(tenantMaxSessions ?? Environment.int("PARLEY_TENANT_MAX_SESSIONS"), "--tenant-max-sessions")
        tenantDefaults.sessionsPerMinute = try positive(tenantSessionsPerMinute ?? Environment.int("PARLEY_TENANT_SESSIONS_PER_MINUTE"), "--tenant-sessions-per-minute")
        let ledger = TenantLedger.shared
        if let n = tenantMetrics ?? Environment.int("PARLEY_TENANT_METRICS") {
            guard n >= 0 else { throw ValidationError("--tenant-metrics must not be negative") }
            ledger.configure(metricsTenants: n)
        }
        return Access(keys: try keys(), tokens: try tokens(), signer: try signer(), tenantDefaults: tenantDefaults, ledger: ledger)
    }

    private func positive(_ value: Int?, _ flag: String) throws -> Int? {
        guard let value else { return nil }
        guard value >= 1 else { throw ValidationError("\(flag) must be at least 1") }
        return value
    }

    /// The JWT verifier, or nil when no token key is configured.
    func tokens() throws -> JWTVerifier? {
        var verifier = JWTVerifier(audience: jwtAudience ?? Environment.string("PARLEY_JWT_AUDIENCE"), issuer: jwtIssuer ?? Environment.string("PARLEY_JWT_ISSUER"))
        let cacheSize = jwtCache ?? Environment.int("PARLEY_JWT_CACHE") ?? JWTCache.defaultCapacity
        guard cacheSize >= 0 else { throw ValidationError("--jwt-cache must not be negative") }
        verifier.cache = cacheSize > 0 ? JWTCache(capacity: cacheSize) : nil
        if let file = jwtSecretFile {
            guard let bytes = Sys.readFile(file) else { throw ValidationError("--jwt-secret-file: cannot read \(file)") }
            verifier.hmacSecret = bytes
        } else if let text = Environment.string("PARLEY_JWT_SECRET") {
            verifier.hmacSecret = Array(text.utf8)
        }
        if let secret = verifier.hmacSecret, secret.count < JWTVerifier.minimumSecretBytes {
            throw ValidationError("the HS256 secret must be at least \(JWTVerifier.minimumSecretBytes) bytes")
        }
        let files = jwtPublicKeyFiles + (Environment.string("PARLEY_JWT_PUBLIC_KEYS")?.split(separator: ",").map { String($0.trimmingSpaces()) } ?? [])
        for file in files where !file.isEmpty {
            guard let pem = Sys.readFile(file) else { throw ValidationError("--jwt-public-key: cannot read \(file)") }
            do {
                verifier.publicKeys.append(try PublicKey(pem: pem))
            } catch {
                throw ValidationError("--jwt-public-key \(file): \(error)")
            }
        }
        return verifier.hmacSecret == nil && verifier.publicKeys.isEmpty ? nil : verifier
    }

    /// The keys, or nil when none are configured.
    func keys() throws -> APIKeys? {
        var keys: [APIKeys.Entry] = []
        if let file = apiKeysFile ?? Environment.string("PARLEY_API_KEYS_FILE") {
            guard let bytes = Sys.readFile(file) else { throw ValidationError("--api-keys: cannot read \(file)") }
            let fromFile = APIKeys.parse(String(decoding: bytes, as: UTF8.self))
            guard !fromFile.isEmpty else { throw ValidationError("--api-keys: \(file) holds no key") }
            keys += fromFile
        }
        if let list = Environment.string("PARLEY_API_KEYS") {
            keys += list.split(separator: ",").map { String($0.trimmingSpaces()) }.filter { !$0.isEmpty }.map { APIKeys.Entry(key: $0) }
        }
        if let one = Environment.string("PARLEY_API_KEY"), !one.isEmpty { keys.append(APIKeys.Entry(key: one)) }
        return keys.isEmpty ? nil : APIKeys(entries: keys)
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
        limits.maxSessionTokens = try positive(maxSessionTokens ?? Environment.int("PARLEY_MAX_SESSION_TOKENS"), "--max-session-tokens")
        return limits
    }

    var allowedOrigins: [String]? {
        (allowedOriginsFlag ?? Environment.string("PARLEY_ALLOWED_ORIGINS")).map {
            $0.split(separator: ",").map { String($0.trimmingSpaces()) }.filter { !$0.isEmpty }
        }
    }

    /// Safe by default: without auth, only loopback. nil when `host` may be served; else the reason.
    func refusal(host: String, access: Access) -> String? {
        guard !access.required, !insecureNoAuth, !Self.isLoopback(host) else { return nil }
        return "parley: refusing to serve \(host) without API keys or tokens: anyone who reaches it would get sessions on your model's account. Give --api-keys FILE (or PARLEY_API_KEY) or a --jwt-… key, serve 127.0.0.1, or pass --insecure-no-auth."
    }

    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host == "[::1]" || host.hasPrefix("127.")
    }
}
