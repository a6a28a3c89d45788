import Loop
import Server

/// Who may open sessions, and how many: the credentials a server accepts (API keys, JWTs, its own
/// client secrets) and the limits of the tenants they name. Checked before the upgrade, so a
/// refusal is an HTTP status (401, 429) and costs no session.
public struct Access: Sendable {
    /// When set, a key from this list opens sessions.
    public var keys: APIKeys?
    /// When set, a JWT these keys verify opens sessions.
    public var tokens: JWTVerifier?
    /// What client secrets are signed and checked with.
    public var signer: ClientSecretSigner
    /// Every tenant's limits unless its token says otherwise.
    public var tenantDefaults: TenantLimits
    public var ledger: TenantLedger
    /// Where tenants are counted beyond this process (the workers of a box, or Redis); nil: the
    /// process counts alone.
    public var shared: (any SharedTenantCount)?
    /// Keys that read session reports (`GET /v1/sessions/{id}`) and nothing else; never a
    /// client's key.
    public var operatorKeys: APIKeys?
    /// The processes a tenant's limits are shared among when the shared count cannot answer
    /// (the workers): each then admits at most its share.
    public var shares: Int

    public init(keys: APIKeys? = nil, tokens: JWTVerifier? = nil, signer: ClientSecretSigner = .random(),
                tenantDefaults: TenantLimits = TenantLimits(), ledger: TenantLedger = .shared,
                shared: (any SharedTenantCount)? = nil, shares: Int = 1) {
        self.keys = keys
        self.tokens = tokens
        self.signer = signer
        self.tenantDefaults = tenantDefaults
        self.ledger = ledger
        self.shared = shared
        self.shares = max(1, shares)
    }

    /// Whether a credential is needed at all; without one, anyone the listener admits connects.
    public var required: Bool { keys != nil || tokens != nil }

    /// Whom a request's credential names, or the 401 that refuses it. `minting`: for the
    /// client-secret routes, where a client secret may not mint another.
    public func identify(_ request: HTTPRequest, offered: [String], minting: Bool = false) -> Result<Caller, HTTPRefusal> {
        guard let credential = APIKeys.presented(in: request, offered: offered) else {
            guard !required else {
                return .failure(Self.unauthorized("missing_api_key", "no credential: send an API key or token as Authorization: Bearer <key>, in the api-key header, or as the openai-insecure-api-key.<key> subprotocol"))
            }
            return .success(Caller(tenant: nil, limits: tenantDefaults))
        }
        if credential.hasPrefix("ek_") && !minting {
            // A client secret must be one of ours and still good, keys or not.
            guard let secret = signer.verify(credential, now: WallClock.seconds()) else {
                return .failure(Self.unauthorized("invalid_client_secret", "the client secret is expired, or was not issued by this server"))
            }
            return .success(Caller(tenant: secret.tenant, limits: secret.limits.over(tenantDefaults), secret: secret))
        }
        if let tokens, JWTVerifier.looksLikeToken(credential) {
            switch tokens.verify(credential, now: WallClock.seconds()) {
            case .success(let claims): return .success(Caller(tenant: claims.tenant, limits: claims.limits.over(tenantDefaults)))
            case .failure(let refusal): return .failure(Self.unauthorized("invalid_token", refusal.message))
            }
        }
        if let keys {
            guard let tenant = keys.tenant(of: credential) else { return .failure(Self.unauthorized("invalid_api_key", "the API key is not valid")) }
            return .success(Caller(tenant: tenant, limits: tenantDefaults))
        }
        guard !required else { return .failure(Self.unauthorized("invalid_token", "this server takes tokens (JWT), and the credential is not one")) }
        // No auth configured: a key sent anyway (an SDK always sends one) is not checked.
        return .success(Caller(tenant: nil, limits: tenantDefaults))
    }

    /// `identify`, then a place in the tenant's count in this process: a refusal is 401, or 429
    /// with Retry-After for a tenant at its limit. With a shared count, the admission's `confirm`
    /// asks it before the upgrade. `held`: whether a session of this tenant that the request
    /// resumes already holds its place here (parked in this process), so it is not counted twice.
    public func admit(_ request: HTTPRequest, offered: [String], resuming: Bool = false, held: (String) -> Bool = { _ in false }) -> Result<Admitted, HTTPRefusal> {
        let caller: Caller
        switch identify(request, offered: offered) {
        case .success(let identified): caller = identified
        case .failure(let refusal): return .failure(refusal)
        }
        // Every tenant is counted, limited or not: its sessions show in the metrics.
        guard let tenant = caller.tenant, !held(tenant) else { return .success(Admitted(caller: caller, lease: nil)) }
        switch ledger.admit(tenant, limits: caller.limits, now: MonotonicClock.nanoseconds(), resuming: resuming) {
        case .success(let lease):
            lease.count = (shared, shares)
            return .success(Admitted(caller: caller, lease: lease, shared: shared, shares: shares))
        case .failure(let refusal): return .failure(Self.tooMany(refusal, caller.limits))
        }
    }

    /// Whether `request` comes from an operator: with operator keys, it presents one (401
    /// without a credential, 403 with any other, a client's key included); without, only on a
    /// server that asks no one for a credential (loopback, or --insecure-no-auth), where anyone
    /// who can connect can read what the sessions said anyway.
    public func operatorAllowed(_ request: HTTPRequest) -> HTTPRefusal? {
        let credential = APIKeys.presented(in: request, offered: [])
        guard let operatorKeys else {
            guard required else { return nil }
            return HTTPRefusal(.jsonError(.forbidden, code: "operator_key_required",
                                          message: "session reports are read with an operator key (--operator-keys), and this server has none"))
        }
        guard let credential else { return Self.unauthorized("missing_api_key", "session reports are read with an operator key") }
        guard operatorKeys.accepts(credential) else {
            return HTTPRefusal(.jsonError(.forbidden, code: "operator_key_required", message: "session reports are read with an operator key"))
        }
        return nil
    }

    static func tooMany(_ refusal: TenantRefusal, _ limits: TenantLimits) -> HTTPRefusal {
        let message = switch refusal.reason {
        case .sessions: "the tenant has its most sessions (\(limits.maxSessions ?? 0)) open; retry when one closes"
        case .rate: "the tenant opened its most sessions this minute (\(limits.sessionsPerMinute ?? 0)); retry in \(refusal.retryAfterSeconds) s"
        case .tokens: "the tenant spent its model tokens for this minute (\(limits.tokensPerMinute ?? 0)); retry in \(refusal.retryAfterSeconds) s"
        }
        return HTTPRefusal(.jsonError(.tooManyRequests, code: refusal.reason.rawValue, message: message,
                                      headers: [("Retry-After", "\(refusal.retryAfterSeconds)")]))
    }

    static func unauthorized(_ code: String, _ message: String) -> HTTPRefusal {
        HTTPRefusal(.jsonError(.unauthorized, code: code, message: message, headers: [("WWW-Authenticate", "Bearer")]))
    }
}

/// Whom a session is for, as its credential said.
public struct Caller {
    /// nil on a server without auth.
    public let tenant: String?
    public let limits: TenantLimits
    /// The client secret the session was opened with, whose settings it keeps.
    public var secret: ClientSecret?

    public init(tenant: String?, limits: TenantLimits, secret: ClientSecret? = nil) {
        self.tenant = tenant
        self.limits = limits
        self.secret = secret
    }
}

/// An admitted upgrade: the caller, and its place in the tenant's count (held by the session).
public struct Admitted {
    public let caller: Caller
    public let lease: TenantLease?
    private let shared: (any SharedTenantCount)?
    private let shares: Int

    public init(caller: Caller, lease: TenantLease?, shared: (any SharedTenantCount)? = nil, shares: Int = 1) {
        self.caller = caller
        self.lease = lease
        self.shared = shared
        self.shares = shares
    }

    /// An incoming phone call's: no tenant, no limits of one (the carrier's own limits apply).
    public static var phoneCall: Admitted { Admitted(caller: Caller(tenant: nil, limits: TenantLimits()), lease: nil) }

    /// Whether the shared count must be asked (`confirm`) before the upgrade.
    public var needsConfirmation: Bool { lease != nil && shared != nil }

    /// Asks the shared count for the session's place: `done` (on `loop`) gets nil to go on, or
    /// the 429. When the count cannot answer, the process admits within its share of the limits
    /// (`Access.shares`), so a tenant is never let through unbounded.
    /// `session`: the session's id when it can be resumed; `resuming`: a resume's token hash.
    public func confirm(session: String?, resuming: String?, on loop: EventLoop, _ done: @escaping (HTTPRefusal?) -> Void) {
        guard let lease, let shared else { return done(nil) }
        let caller = caller, shares = shares
        shared.admit(TenantAsk(tenant: lease.tenant, limits: caller.limits, session: session, resuming: resuming), on: loop) { verdict in
            let ledger = lease.ledger
            switch verdict {
            case .admitted(let place):
                ledger.sharedCount(up: true, scope: shared.scope)
                lease.shared = place
                done(nil)
            case .refused(let refusal):
                ledger.sharedCount(up: true, scope: shared.scope)
                ledger.countRefusal(lease.tenant, refusal)
                done(Access.tooMany(refusal, caller.limits))
            case .unavailable(let why):
                ledger.sharedCount(up: false, scope: shared.scope, why: why)
                let refusal = ledger.withinShare(lease.tenant, limits: caller.limits, shares: shares, now: MonotonicClock.nanoseconds())
                done(refusal.map { Access.tooMany($0, caller.limits) })
            }
        }
    }
}
