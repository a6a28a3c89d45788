import Access
import ArgumentParser
import JSON
import Loop
import Session
import TLS

/// `parley token`: makes the JWTs `parley serve --jwt-…` accepts, for development, tests and load
/// runs; in production the operator's identity provider makes them. `--new-key` makes a key pair.
struct TokenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Make a JWT for parley serve's --jwt-secret-file or --jwt-public-key (or a key pair to sign them).",
        discussion: """
            parley token --new-key es256 --key k.pem      writes k.pem (private) and k.pub.pem (for --jwt-public-key)
            parley token --key k.pem --sub acme           prints an ES256 token for tenant acme, good for an hour
            parley token --secret-file s --sub acme       prints an HS256 token (the file holds the shared secret)
            """)

    @Option(help: ArgumentHelp("A PEM private key (RSA or EC P-256) to sign with; with --new-key, where to write one.", valueName: "file"))
    var key: String?

    @Option(name: .customLong("secret-file"), help: ArgumentHelp("A file holding the HS256 secret to sign with.", valueName: "file"))
    var secretFile: String?

    @Option(name: .customLong("new-key"), help: ArgumentHelp("Make a key pair instead of a token: es256 or rs256.", valueName: "scheme"))
    var newKey: String?

    @Option(help: "The tenant (the token's sub).")
    var sub: String?

    @Option(help: "Seconds the token is good for.")
    var ttl = 3600

    @Option(help: "The token's aud.")
    var aud: String?

    @Option(help: "The token's iss.")
    var iss: String?

    @Option(help: "Claim parley_max_sessions: sessions the tenant may hold open.")
    var maxSessions: Int?

    @Option(help: "Claim parley_sessions_per_minute.")
    var sessionsPerMinute: Int?

    @Option(help: "Claim parley_max_session_minutes.")
    var maxSessionMinutes: Double?

    @Option(help: "Claim parley_max_session_tokens.")
    var maxSessionTokens: Int?

    @Option(help: "Claim parley_tokens_per_minute.")
    var tokensPerMinute: Int?

    func run() throws {
        if let newKey {
            guard let scheme = SignatureScheme(rawValue: newKey.uppercased()), let path = key else {
                throw ValidationError("--new-key takes es256 or rs256, with --key FILE to write it to")
            }
            let pair = try PrivateKey(generating: scheme)
            let publicPath = (path.hasSuffix(".pem") ? String(path.dropLast(4)) : path) + ".pub.pem"
            try write(pair.privatePEM, to: path, mode: 0o600)
            try write(pair.publicPEM, to: publicPath, mode: 0o644)
            print("\(path) (private, signs with parley token --key) and \(publicPath) (for parley serve --jwt-public-key)")
            return
        }
        guard let sub, !sub.isEmpty else { throw ValidationError("--sub names the tenant") }
        let signing: JWTSigner.Key
        switch (key, secretFile) {
        case (let file?, nil):
            guard let pem = Sys.readFile(file) else { throw ValidationError("--key: cannot read \(file)") }
            signing = .key(try PrivateKey(pem: pem))
        case (nil, let file?):
            guard let secret = Sys.readFile(file) else { throw ValidationError("--secret-file: cannot read \(file)") }
            signing = .hmac(secret)
        default:
            throw ValidationError("give one of --key FILE or --secret-file FILE")
        }
        let now = WallClock.seconds()
        var claims: [(String, JSON)] = [("sub", .string(sub)), ("iat", .int(now)), ("exp", .int(now + ttl))]
        if let aud { claims.append(("aud", .string(aud))) }
        if let iss { claims.append(("iss", .string(iss))) }
        let limits = TenantLimits(maxSessions: maxSessions, sessionsPerMinute: sessionsPerMinute,
                                  maxSessionSeconds: maxSessionMinutes.map { $0 * 60 }, maxSessionTokens: maxSessionTokens,
                                  tokensPerMinute: tokensPerMinute)
        claims += limits.claims
        print(try JWTSigner.sign(.object(claims), with: signing))
    }

    private func write(_ text: String, to path: String, mode: UInt32) throws {
        do {
            try Sys.writeFile(path, Array(text.utf8), mode: mode)
        } catch {
            throw ValidationError("cannot write \(path): \(error)")
        }
    }
}
