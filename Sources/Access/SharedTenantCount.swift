import Loop

/// Where a tenant's sessions are counted beyond this process, so that its limits hold for a
/// deployment rather than for each process of it: the workers of one box (`WorkerTenantTable`,
/// shared memory) or every process on one Redis (`RedisTenantCount`). The process's own
/// `TenantLedger` still counts first: it is the bound while the shared count cannot answer.
public protocol SharedTenantCount: AnyObject, Sendable {
    /// Asks for a place for one session; `done` runs on `loop`, perhaps before this returns.
    func admit(_ ask: TenantAsk, on loop: EventLoop, _ done: @escaping (SharedVerdict) -> Void)
    /// Spends a reply's `tokens` from the tenant's shared token budget (`perMinute` a minute);
    /// `done` (on `loop`) says what is left.
    func spend(_ tokens: Int, of tenant: String, perMinute: Int, on loop: EventLoop, _ done: @escaping (SpendVerdict) -> Void)
    /// What the count is called in metrics and logs: "workers" or "redis".
    var scope: String { get }
}

/// One session asking for a place in its tenant's shared count.
public struct TenantAsk: Sendable {
    public let tenant: String
    public let limits: TenantLimits
    /// The session's id, when it can be resumed: its place follows it to the process it resumes on.
    public let session: String?
    /// For a resume: the hash of the token it presents, whose session may already hold a place,
    /// which then moves here rather than being counted twice.
    public let resuming: String?

    public init(tenant: String, limits: TenantLimits, session: String? = nil, resuming: String? = nil) {
        self.tenant = tenant
        self.limits = limits
        self.session = session
        self.resuming = resuming
    }
}

public enum SharedVerdict: Sendable {
    case admitted(SharedPlace)
    case refused(TenantRefusal)
    /// The count could not be asked (Redis down or slow, the table full): the process decides alone.
    case unavailable(String)
}

/// A place granted in a shared count, given back once (by the lease that holds it).
public struct SharedPlace: Sendable {
    /// Gives the place back; callable from any thread.
    let release: @Sendable () -> Void

    public init(release: @escaping @Sendable () -> Void) {
        self.release = release
    }
}

public enum SpendVerdict: Sendable, Equatable {
    /// Spent: the budget has tokens again in `waitSeconds`, or has them now (nil).
    case spent(waitSeconds: Int?)
    /// The count could not be asked: the process counts the spend against its share.
    case unavailable
}
