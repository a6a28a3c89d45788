import Access
import ArgumentParser
import Loop
import Server
import Session
import TLS
#if canImport(Glibc)
import Glibc
import SessionEngine
#endif

/// Who may connect: API keys, JWTs, browser origins, what each tenant and session may spend, and
/// the rule that a server without auth serves only its own machine.
struct AccessOptions: ParsableArguments {
    enum Settings {
        static let operatorKeysFile = Setting.text("--operator-keys", "PARLEY_OPERATOR_KEYS_FILE", valueName: "file",
                                                   about: "A file of operator keys, one a line: they read session reports (GET /v1/sessions/{id}) and open no session; a client's key never reads a report. PARLEY_OPERATOR_KEY adds one from the environment")
        static let apiKeysFile = Setting.text("--api-keys", "PARLEY_API_KEYS_FILE", valueName: "file",
                                              about: "A file of API keys, one a line (# comments); sessions must present one. PARLEY_API_KEYS (comma-separated) and PARLEY_API_KEY add keys from the environment")
        static let jwtAudience = Setting.text("--jwt-audience", "PARLEY_JWT_AUDIENCE", valueName: "aud", about: "A token's aud must be or contain this")
        static let jwtIssuer = Setting.text("--jwt-issuer", "PARLEY_JWT_ISSUER", valueName: "iss", about: "A token's iss must be this")
        static let jwtCache = Setting.whole("--jwt-cache", "PARLEY_JWT_CACHE", default: JWTCache.defaultCapacity, in: 0...,
                                            about: "Tokens whose signatures are remembered, so that a token presented again is not verified again (its claims always are); 0: verify every time")
        static let tenantMaxSessions = Setting.whole("--tenant-max-sessions", "PARLEY_TENANT_MAX_SESSIONS", shown: "no limit; a token's parley_max_sessions claim sets its own", in: 1...,
                                                     about: "Sessions a tenant (an API key's, or a token's sub) may hold open, counted across the workers and, with a Redis store, the nodes; more get 429")
        static let tenantSessionsPerMinute = Setting.whole("--tenant-sessions-per-minute", "PARLEY_TENANT_SESSIONS_PER_MINUTE", shown: "no limit; claim parley_sessions_per_minute", in: 1...,
                                                           about: "Sessions a tenant may open a minute, counted as --tenant-max-sessions is; more get 429 with Retry-After")
        static let tenantTokensPerMinute = Setting.whole("--tenant-tokens-per-minute", "PARLEY_TENANT_TOKENS_PER_MINUTE", shown: "no limit; claim parley_tokens_per_minute", in: 1...,
                                                         about: "Model tokens a tenant's sessions may spend a minute together, counted as --tenant-max-sessions is; while spent, new sessions get 429 and replies fail with tenant_tokens")
        static let tenantMetrics = Setting.whole("--tenant-metrics", "PARLEY_TENANT_METRICS", default: TenantLedger.defaultMetricsTenants, in: 0...,
                                                 about: "Tenants named in /metrics; the rest add up as tenant=\"_other\"")
        static let allowedOrigins = Setting.text("--allowed-origins", "PARLEY_ALLOWED_ORIGINS", shown: "any", valueName: "origins",
                                                 about: "Comma-separated origins (https://app.example.com) whose pages may open sessions; an upgrade from any other Origin gets 403")
        static let maxEventsPerSecond = Setting.whole("--max-events-per-second", "PARLEY_MAX_EVENTS_PER_SECOND", default: SessionLimits().eventsPerSecond, in: 1...,
                                                      about: "Client events (and audio frames) a session may send a second, over a two-second burst; past it the session is closed with 1008")
        static let maxSessionMinutes = Setting.number("--max-session-minutes", "PARLEY_MAX_SESSION_MINUTES", default: (SessionLimits().maxSessionSeconds ?? 0) / 60,
                                                      in: AtLeast(lower: 0), about: "Longest session in minutes (0: no limit); then an error event and close 1008")
        static let maxSessionTokens = Setting.whole("--max-session-tokens", "PARLEY_MAX_SESSION_TOKENS", shown: "no limit; claim parley_max_session_tokens", in: 1...,
                                                    about: "Model tokens (input and output) a session may spend; past it, an error event and close 1008")
        static let maxHistoryBytes = Setting.whole("--max-history-bytes", "PARLEY_MAX_HISTORY_BYTES", default: SessionLimits().maxHistoryBytes, in: 1024...,
                                                   about: "Bytes of text a session's conversation history may hold (a session may ask for less with max_history_bytes); past it, or past the model's context where the model is known, the oldest messages go as the session's truncation says")
        static let metricsListen = Setting<(host: String, port: Int)?>("--metrics-listen", "PARLEY_METRICS_LISTEN", default: nil, shown: "the main port", valueName: "host:port",
                                                                      about: "Serve /metrics (and /healthz) on this address instead of the main port, e.g. 127.0.0.1:9100") { text throws(SettingRejection) in
            guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port) else {
                throw SettingRejection("is not host:port")
            }
            var host = String(text[..<colon])
            if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            return (host, port)
        }
    }

    @Option(Settings.apiKeysFile) var apiKeysFile: String?
    @Option(Settings.operatorKeysFile) var operatorKeysFile: String?

    // The secrets' files are flags and the secrets themselves variables: a flag's value would show
    // in the process list.
    @Option(name: .customLong("jwt-secret-file"), help: ArgumentHelp("A file whose contents (at least 32 bytes) check HS256 tokens (PARLEY_JWT_SECRET holds the secret itself).", valueName: "file"))
    var jwtSecretFile: String?

    @Option(name: .customLong("jwt-public-key"), help: ArgumentHelp("A PEM public key checking RS256 (RSA, 2048 bits or more) or ES256 (P-256) tokens, by what the key is; repeat for several (PARLEY_JWT_PUBLIC_KEYS: comma-separated files).", valueName: "file"))
    var jwtPublicKeyFiles: [String] = []

    @Option(Settings.jwtAudience) var jwtAudience: String?
    @Option(Settings.jwtIssuer) var jwtIssuer: String?
    @Option(Settings.jwtCache) var jwtCache: String?
    @Option(Settings.tenantMaxSessions) var tenantMaxSessions: String?
    @Option(Settings.tenantSessionsPerMinute) var tenantSessionsPerMinute: String?
    @Option(Settings.tenantTokensPerMinute) var tenantTokensPerMinute: String?
    @Option(Settings.tenantMetrics) var tenantMetrics: String?
    @Option(Settings.allowedOrigins) var allowedOriginsFlag: String?

    @Option(name: .customLong("signing-key-file"), help: ArgumentHelp("A file whose contents (at least 32 bytes) sign client secrets, the same on every node so that any node accepts any node's secrets (PARLEY_SIGNING_KEY holds the key itself). Default: a random key of this process.", valueName: "file"))
    var signingKeyFile: String?

    @Option(Settings.maxEventsPerSecond) var maxEventsPerSecond: String?
    @Option(Settings.maxSessionMinutes) var maxSessionMinutes: String?
    @Option(Settings.maxSessionTokens) var maxSessionTokens: String?
    @Option(Settings.maxHistoryBytes) var maxHistoryBytes: String?
    @Option(Settings.metricsListen) var metricsListenFlag: String?

    @Flag(name: .customLong("insecure-no-auth"), help: "Serve a non-loopback address without API keys or tokens (anyone who reaches the port gets a session and spends the model's key).")
    var insecureNoAuth = false

    /// Everything the flags and environment say about who may connect.
    func access() throws(SettingError) -> Access {
        var tenantDefaults = TenantLimits()
        tenantDefaults.maxSessions = try Settings.tenantMaxSessions.read(tenantMaxSessions)
        tenantDefaults.sessionsPerMinute = try Settings.tenantSessionsPerMinute.read(tenantSessionsPerMinute)
        tenantDefaults.tokensPerMinute = try Settings.tenantTokensPerMinute.read(tenantTokensPerMinute)
        let ledger = TenantLedger.shared
        ledger.configure(metricsTenants: try Settings.tenantMetrics.read(tenantMetrics))
        var access = Access(keys: try keys(), tokens: try tokens(), signer: try signer(), tenantDefaults: tenantDefaults, ledger: ledger)
        access.operatorKeys = try operatorKeys()
        return access
    }

    /// The JWT verifier, or nil when no token key is configured.
    func tokens() throws(SettingError) -> JWTVerifier? {
        var verifier = JWTVerifier(audience: try Settings.jwtAudience.read(jwtAudience), issuer: try Settings.jwtIssuer.read(jwtIssuer))
        let cacheSize = try Settings.jwtCache.read(jwtCache)
        verifier.cache = cacheSize > 0 ? JWTCache(capacity: cacheSize) : nil
        if let file = jwtSecretFile {
            guard let bytes = Sys.readFile(file) else { throw .unreadable("--jwt-secret-file", file) }
            guard bytes.count >= JWTVerifier.minimumSecretBytes else {
                throw SettingError(names: "--jwt-secret-file", value: file, reason: "holds fewer than \(JWTVerifier.minimumSecretBytes) bytes")
            }
            verifier.hmacSecret = bytes
        } else if let text = Environment.string("PARLEY_JWT_SECRET") {
            // The secret itself is not repeated in the message.
            guard text.utf8.count >= JWTVerifier.minimumSecretBytes else {
                throw SettingError(names: "PARLEY_JWT_SECRET", value: "…", reason: "is shorter than \(JWTVerifier.minimumSecretBytes) bytes")
            }
            verifier.hmacSecret = Array(text.utf8)
        }
        let files = jwtPublicKeyFiles + (Environment.string("PARLEY_JWT_PUBLIC_KEYS")?.split(separator: ",").map { String($0.trimmingSpaces()) } ?? [])
        for file in files where !file.isEmpty {
            guard let pem = Sys.readFile(file) else { throw .unreadable("--jwt-public-key (PARLEY_JWT_PUBLIC_KEYS)", file) }
            do {
                verifier.publicKeys.append(try PublicKey(pem: pem))
            } catch {
                throw SettingError(names: "--jwt-public-key (PARLEY_JWT_PUBLIC_KEYS)", value: file, reason: "is not a public key: \(error)")
            }
        }
        return verifier.hmacSecret == nil && verifier.publicKeys.isEmpty ? nil : verifier
    }

    /// The keys, or nil when none are configured.
    func keys() throws(SettingError) -> APIKeys? {
        var keys = try Self.keys(in: Settings.apiKeysFile, apiKeysFile)
        if let list = Environment.string("PARLEY_API_KEYS") {
            keys += list.split(separator: ",").map { String($0.trimmingSpaces()) }.filter { !$0.isEmpty }.map { APIKeys.Entry(key: $0) }
        }
        if let one = Environment.string("PARLEY_API_KEY"), !one.isEmpty { keys.append(APIKeys.Entry(key: one)) }
        return keys.isEmpty ? nil : APIKeys(entries: keys)
    }

    /// The operator's keys (session reports), or nil when none are configured.
    func operatorKeys() throws(SettingError) -> APIKeys? {
        var keys = try Self.keys(in: Settings.operatorKeysFile, operatorKeysFile)
        if let one = Environment.string("PARLEY_OPERATOR_KEY"), !one.isEmpty { keys.append(APIKeys.Entry(key: one)) }
        return keys.isEmpty ? nil : APIKeys(entries: keys)
    }

    /// The keys in the file `setting` names, if it names one: a file that cannot be read or holds
    /// none stops the start.
    private static func keys(in setting: Setting<String?>, _ value: String?) throws(SettingError) -> [APIKeys.Entry] {
        guard let file = try setting.read(value) else { return [] }
        guard let bytes = Sys.readFile(file) else { throw setting.refuse(file, "cannot be read") }
        let keys = APIKeys.parse(String(decoding: bytes, as: UTF8.self))
        guard !keys.isEmpty else { throw setting.refuse(file, "holds no key") }
        return keys
    }

    /// What signs and checks client secrets.
    func signer() throws(SettingError) -> ClientSecretSigner {
        var key: [UInt8]?
        var names = "PARLEY_SIGNING_KEY", shown = "…"
        if let file = signingKeyFile {
            guard let bytes = Sys.readFile(file) else { throw .unreadable("--signing-key-file", file) }
            key = bytes
            names = "--signing-key-file"
            shown = file
        } else if let text = Environment.string("PARLEY_SIGNING_KEY") {
            key = Array(text.utf8)
        }
        guard let key else { return .random() }
        guard key.count >= 32 else { throw SettingError(names: names, value: shown, reason: "is a signing key shorter than 32 bytes") }
        return ClientSecretSigner(key: key)
    }

    /// `--metrics-listen`'s host and port, if given.
    func metricsListen() throws(SettingError) -> (host: String, port: Int)? {
        try Settings.metricsListen.read(metricsListenFlag)
    }

    /// What each session may spend.
    func limits() throws(SettingError) -> SessionLimits {
        var limits = SessionLimits()
        limits.eventsPerSecond = try Settings.maxEventsPerSecond.read(maxEventsPerSecond)
        let minutes = try Settings.maxSessionMinutes.read(maxSessionMinutes)
        limits.maxSessionSeconds = minutes == 0 ? nil : minutes * 60
        limits.maxSessionTokens = try Settings.maxSessionTokens.read(maxSessionTokens)
        limits.maxHistoryBytes = try Settings.maxHistoryBytes.read(maxHistoryBytes)
        return limits
    }

    func allowedOrigins() throws(SettingError) -> [String]? {
        try Settings.allowedOrigins.read(allowedOriginsFlag).map {
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
