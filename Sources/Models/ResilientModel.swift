import Loop
import Metrics
import Synchronization

/// The language model sessions talk to, in front of the configured upstreams (the primary, and a
/// fallback when one is given): each turn follows a `RetryPlan`, a stream that goes quiet is cut,
/// an upstream that keeps failing has its circuit opened, and when every attempt fails the session
/// answers the turn with the policy's apology, so a caller hears something rather than silence.
///
/// Only attempts the client has seen nothing of are retried: once a reply has begun, a fault ends
/// it (with the apology after what was said), since sending it again would repeat it.
public struct ResilientModel: LanguageModel {
    public let name: String
    let upstreams: [(model: any LanguageModel, circuit: Circuit)]
    let policy: UpstreamPolicy

    public init(primary: any LanguageModel, fallback: (any LanguageModel)? = nil, policy: UpstreamPolicy = UpstreamPolicy()) {
        name = primary.name
        var upstreams: [(any LanguageModel, Circuit)] = [(primary, Circuit(label: .primary, policy: policy))]
        if let fallback { upstreams.append((fallback, Circuit(label: .fallback, policy: policy))) }
        self.upstreams = upstreams
        self.policy = policy
    }

    public var apology: String? { policy.apology.isEmpty ? nil : policy.apology }

    public func stream(_ request: ModelRequest, on loop: EventLoop, _ onEvent: @escaping (ModelEvent) -> Void) -> any ModelCall {
        let call = ResilientCall(model: self, request: request, loop: loop, onEvent: onEvent)
        call.start()
        return call
    }
}

/// An upstream's circuit: closed while it answers; open for `circuitOpenSeconds` after
/// `circuitFailures` failed turns in a row, when calls skip it at once; then half open, letting
/// one turn through to find out. Shared by every loop.
final class Circuit: Sendable {
    private struct State {
        var failures = 0
        var openUntil: UInt64 = 0
        var trial = false
    }

    let label: UpstreamRole
    private let policy: UpstreamPolicy
    private let state = Mutex(State())

    init(label: UpstreamRole, policy: UpstreamPolicy) {
        self.label = label
        self.policy = policy
    }

    /// Whether calls must skip this upstream now. Past the open period, one caller is let
    /// through (and says how it went); the others still skip it until then.
    func isOpen(now: UInt64) -> Bool {
        state.withLock { state in
            guard state.openUntil != 0 else { return false }
            if now >= state.openUntil && !state.trial {
                state.trial = true
                return false
            }
            return true
        }
    }

    func succeeded() {
        let wasOpen = state.withLock { state in
            defer { state = State() }
            return state.openUntil != 0
        }
        if wasOpen { UpstreamMetrics.shared.circuitsOpen.add(-1, label) }
    }

    func failed(now: UInt64) {
        let opened = state.withLock { state in
            state.failures += 1
            let wasOpen = state.openUntil != 0
            guard state.failures >= policy.circuitFailures else { return false }
            state.openUntil = now + UInt64(policy.circuitOpenSeconds * 1e9)
            state.trial = false
            return !wasOpen
        }
        if opened {
            UpstreamMetrics.shared.circuitsOpen.add(1, label)
            modelLog.warning("upstream circuit open", metadata: ["upstream": "\(label)", "seconds": "\(policy.circuitOpenSeconds)"])
        }
    }
}

/// One turn's call through `ResilientModel`, on the session's loop.
final class ResilientCall: ModelCall {
    private let model: ResilientModel
    private let request: ModelRequest
    private let loop: EventLoop
    private let onEvent: (ModelEvent) -> Void
    private var plan: RetryPlan
    private var attempt: (any ModelCall)?
    private var timer: ScheduledTask?
    /// The client has seen something of this turn's reply.
    private var forwarded = false
    /// The upstream being tried.
    private var current = 0
    /// When the reply's last piece came.
    private var lastPieceAt: UInt64 = 0
    private var over = false
    /// Why the last attempt failed; nil before the first has.
    private var lastFailure: String?
    private let metrics = UpstreamMetrics.shared

    init(model: ResilientModel, request: ModelRequest, loop: EventLoop, onEvent: @escaping (ModelEvent) -> Void) {
        self.model = model
        self.request = request
        self.loop = loop
        self.onEvent = onEvent
        plan = RetryPlan(policy: model.policy, upstreams: model.upstreams.count, now: MonotonicClock.nanoseconds())
    }

    func start() {
        let now = MonotonicClock.nanoseconds()
        follow(plan.start { self.model.upstreams[$0].circuit.isOpen(now: now) }, after: ModelError(code: "upstream_unavailable", message: "every language model upstream is failing"))
    }

    func cancel() {
        over = true
        timer?.cancel()
        attempt?.cancel()
        attempt = nil
    }

    private func follow(_ next: RetryPlan.Next, after error: ModelError) {
        switch next {
        case .giveUp:
            giveUp(error)
        case .attempt(let upstream, let wait) where wait > 0:
            metrics.retries.add(1)
            timer = loop.schedule(after: wait) { [weak self] in self?.begin(upstream) }
        case .attempt(let upstream, _):
            begin(upstream)
        }
    }

    private func begin(_ upstream: Int) {
        guard !over else { return }
        // Every attempt after the first says so (the trace's event; nothing for the client).
        if let lastFailure { onEvent(.retrying(upstream: model.upstreams[upstream].circuit.label.rawValue, after: lastFailure)) }
        if upstream > 0 && current != upstream { metrics.fallbacks.add(1) }
        current = upstream
        armTimer(model.policy.firstTokenSeconds)
        attempt = model.upstreams[upstream].model.stream(request, on: loop) { [weak self] event in self?.received(event, from: upstream) }
    }

    private func received(_ event: ModelEvent, from upstream: Int) {
        guard !over else { return }
        switch event {
        case .finished:
            over = true
            timer?.cancel()
            attempt = nil
            model.upstreams[upstream].circuit.succeeded()
            onEvent(event)
        case .failed(let error):
            attempt = nil
            failed(error, upstream: upstream)
        default:
            // The stall timer is not moved for every piece (a timer per delta, on the hot path):
            // it checks, when it fires, how long ago the last piece came.
            if !forwarded { armTimer(model.policy.stallSeconds) }
            forwarded = true
            lastPieceAt = MonotonicClock.nanoseconds()
            onEvent(event)
        }
    }

    private func failed(_ error: ModelError, upstream: Int) {
        timer?.cancel()
        let now = MonotonicClock.nanoseconds()
        model.upstreams[upstream].circuit.failed(now: now)
        modelLog.warning("model attempt failed", metadata: ["upstream": "\(model.upstreams[upstream].circuit.label)", "code": "\(error.code)",
                                                              "error": "\(error.message)", "reply_begun": "\(forwarded)"])
        guard !forwarded else { return giveUp(error) }
        lastFailure = error.code
        follow(plan.failed(error, now: now) { self.model.upstreams[$0].circuit.isOpen(now: now) }, after: error)
    }

    /// The reply went quiet for too long: the attempt is cut and counted as a failure. Once the
    /// reply has begun, a firing timer that finds a piece came since waits out the rest instead.
    private func armTimer(_ seconds: Double) {
        timer?.cancel()
        timer = loop.schedule(after: seconds) { [weak self] in
            guard let self, !over else { return }
            if forwarded {
                let quiet = Double(MonotonicClock.nanoseconds() &- lastPieceAt) / 1e9
                let stall = model.policy.stallSeconds
                if quiet < stall { return armTimer(stall - quiet) }
            }
            metrics.stalls.add(1)
            attempt?.cancel()
            attempt = nil
            failed(ModelError(code: "upstream_timeout", message: "the language model sent nothing for \(Int(seconds)) s", retryable: true), upstream: current)
        }
    }

    /// Every attempt failed: the last failure goes to the session, which apologises for it (see
    /// `LanguageModel.apology`).
    private func giveUp(_ error: ModelError) {
        over = true
        timer?.cancel()
        onEvent(.failed(error))
    }
}
