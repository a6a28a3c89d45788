/// How a turn's model call meets an upstream's faults (`parley serve --llm-turn-budget`,
/// `--llm-stall-seconds`, `--llm-apology`, `--llm-fallback`): retried with backoff inside a
/// budget, cut when it goes quiet, kept off an upstream that keeps failing, moved to the fallback,
/// and, when all that fails, answered with an apology rather than silence.
public struct UpstreamPolicy: Sendable, Equatable {
    /// All of one turn's attempts, on every upstream, must start within this long of the first.
    public var turnBudgetSeconds = 8.0
    /// The first retry's wait; each next one doubles it, up to `maxBackoffSeconds`.
    public var firstBackoffSeconds = 0.25
    public var maxBackoffSeconds = 2.0
    /// Attempts on one upstream in one turn before moving on.
    public var attemptsPerUpstream = 3
    /// A reply that stops this long between two pieces is cut (the upstream client's own idle
    /// time-out is 60 s: a caller would hear a minute of silence).
    public var stallSeconds = 5.0
    /// The first piece may take longer (a cold model, a long prompt), but not forever.
    public var firstTokenSeconds = 20.0
    /// Consecutive failed turns that open an upstream's circuit, and for how long it stays open.
    public var circuitFailures = 5
    public var circuitOpenSeconds = 30.0
    /// Said (or written) when every attempt failed; empty: the response fails with the error.
    public var apology = "Sorry, I can't answer right now. Please try again in a moment."

    public init() {}
}

/// One turn's attempts, as rules: which upstream goes next and after how long, or give up. A
/// value fed the time, so every rule is a unit test.
struct RetryPlan {
    enum Next: Equatable {
        /// Try upstream `upstream` after `afterSeconds`.
        case attempt(upstream: Int, afterSeconds: Double)
        case giveUp
    }

    let policy: UpstreamPolicy
    let upstreams: Int
    private let deadline: UInt64
    private(set) var upstream = 0
    private var attempts = 0

    init(policy: UpstreamPolicy, upstreams: Int, now: UInt64) {
        self.policy = policy
        self.upstreams = upstreams
        deadline = now + UInt64(policy.turnBudgetSeconds * 1e9)
    }

    /// The first attempt: the first upstream whose circuit lets calls through.
    mutating func start(open: (Int) -> Bool) -> Next {
        guard let first = (0..<upstreams).first(where: { !open($0) }) else { return .giveUp }
        upstream = first
        attempts = 1
        return .attempt(upstream: first, afterSeconds: 0)
    }

    /// The attempt failed with `error` before the client saw anything of it.
    mutating func failed(_ error: ModelError, now: UInt64, open: (Int) -> Bool) -> Next {
        let remaining = now < deadline ? Double(deadline - now) / 1e9 : 0
        if error.retryable, attempts < policy.attemptsPerUpstream, !open(upstream) {
            var wait = min(policy.maxBackoffSeconds, policy.firstBackoffSeconds * Double(1 << min(attempts - 1, 16)))
            // An upstream's Retry-After is honoured when it fits the budget; when it does not,
            // waiting for it would only end in the apology: better the fallback now.
            if let asked = error.retryAfter { wait = max(wait, asked) }
            if wait < remaining {
                attempts += 1
                return .attempt(upstream: upstream, afterSeconds: wait)
            }
        }
        guard remaining > 0, let next = ((upstream + 1)..<upstreams).first(where: { !open($0) }) else { return .giveUp }
        upstream = next
        attempts = 1
        return .attempt(upstream: next, afterSeconds: 0)
    }
}
