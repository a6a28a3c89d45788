@testable import Models
import Testing

/// A turn's attempts against failing upstreams, as rules: backoff inside the budget, Retry-After
/// honoured when it fits, the fallback when it does not, and circuits that skip a failing upstream.
@Suite struct RetryPlanTests {
    let second: UInt64 = 1_000_000_000
    let flaky = ModelError(code: "upstream_error", message: "HTTP 500", retryable: true)
    let closed: (Int) -> Bool = { _ in false }

    @Test func retryableFailuresBackOffThenMoveToTheFallback() {
        var plan = RetryPlan(policy: UpstreamPolicy(), upstreams: 2, now: 0)
        #expect(plan.start(open: closed) == .attempt(upstream: 0, afterSeconds: 0))
        #expect(plan.failed(flaky, now: 0, open: closed) == .attempt(upstream: 0, afterSeconds: 0.25))
        #expect(plan.failed(flaky, now: second / 4, open: closed) == .attempt(upstream: 0, afterSeconds: 0.5))
        #expect(plan.failed(flaky, now: second, open: closed) == .attempt(upstream: 1, afterSeconds: 0), "three attempts on the primary")
        #expect(plan.failed(flaky, now: second, open: closed) == .attempt(upstream: 1, afterSeconds: 0.25))
    }

    @Test func aRequestTheUpstreamRefusesIsNotRetriedThere() {
        var plan = RetryPlan(policy: UpstreamPolicy(), upstreams: 2, now: 0)
        _ = plan.start(open: closed)
        let refused = ModelError(code: "upstream_error", message: "HTTP 400")
        #expect(plan.failed(refused, now: 0, open: closed) == .attempt(upstream: 1, afterSeconds: 0))
        #expect(plan.failed(refused, now: 0, open: closed) == .giveUp)
    }

    @Test func retryAfterIsHonouredWhenItFitsTheBudget() {
        var plan = RetryPlan(policy: UpstreamPolicy(), upstreams: 2, now: 0)
        _ = plan.start(open: closed)
        let limited = ModelError(code: "rate_limited", message: "HTTP 429", retryAfter: 1, retryable: true)
        #expect(plan.failed(limited, now: 0, open: closed) == .attempt(upstream: 0, afterSeconds: 1))
        let later = ModelError(code: "rate_limited", message: "HTTP 429", retryAfter: 30, retryable: true)
        #expect(plan.failed(later, now: second, open: closed) == .attempt(upstream: 1, afterSeconds: 0), "30 s does not fit 8: the fallback now")
    }

    @Test func theBudgetEndsTheTurn() {
        var policy = UpstreamPolicy()
        policy.turnBudgetSeconds = 1
        var plan = RetryPlan(policy: policy, upstreams: 1, now: 0)
        _ = plan.start(open: closed)
        #expect(plan.failed(flaky, now: 0, open: closed) == .attempt(upstream: 0, afterSeconds: 0.25))
        #expect(plan.failed(flaky, now: 900_000_000, open: closed) == .giveUp, "the next wait would pass the budget")
    }

    @Test func openCircuitsAreSkipped() {
        var plan = RetryPlan(policy: UpstreamPolicy(), upstreams: 2, now: 0)
        #expect(plan.start { $0 == 0 } == .attempt(upstream: 1, afterSeconds: 0))
        var none = RetryPlan(policy: UpstreamPolicy(), upstreams: 2, now: 0)
        #expect(none.start { _ in true } == .giveUp)
    }

    @Test func aCircuitOpensAfterRepeatedFailuresAndLetsOneTrialThrough() {
        var policy = UpstreamPolicy()
        policy.circuitFailures = 3
        policy.circuitOpenSeconds = 10
        let circuit = Circuit(label: .primary, policy: policy)
        for _ in 0..<2 { circuit.failed(now: 0) }
        #expect(!circuit.isOpen(now: 0))
        circuit.failed(now: 0)
        #expect(circuit.isOpen(now: 5 * second))
        #expect(!circuit.isOpen(now: 11 * second), "one trial after the open period")
        #expect(circuit.isOpen(now: 11 * second), "and only one")
        circuit.succeeded()
        #expect(!circuit.isOpen(now: 12 * second))
    }
}
