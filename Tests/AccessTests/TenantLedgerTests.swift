import Testing
@testable import Access

/// Each tenant's sessions at once and a minute, as the ledger counts them; and its metrics, which
/// name a bounded number of tenants.
@Suite struct TenantLedgerTests {
    func refusal(_ result: Result<TenantLease, TenantRefusal>) -> TenantRefusal? {
        if case .failure(let refusal) = result { refusal } else { nil }
    }

    @Test func sessionsAtOnceAreCountedAndGivenBackWithTheLease() throws {
        let ledger = TenantLedger()
        let limits = TenantLimits(maxSessions: 2)
        var leases = [try ledger.admit("acme", limits: limits, now: 1).get(), try ledger.admit("acme", limits: limits, now: 1).get()]
        #expect(refusal(ledger.admit("acme", limits: limits, now: 1)) == TenantRefusal(reason: .sessions, retryAfterSeconds: 1))
        #expect((try? ledger.admit("globex", limits: limits, now: 1).get()) != nil, "another tenant has its own count")
        leases.removeLast()
        #expect(ledger.openSessions("acme") == 1)
        leases.append(try ledger.admit("acme", limits: limits, now: 1).get())
        #expect(ledger.openSessions("acme") == 2)
    }

    /// A resume was admitted when its session opened: it is counted, never refused for the count
    /// or the rate, so a tenant full of sessions opened meanwhile does not lose it.
    @Test func aResumeIsCountedButNeverRefused() throws {
        let ledger = TenantLedger()
        let limits = TenantLimits(maxSessions: 1, sessionsPerMinute: 1)
        let first = try ledger.admit("acme", limits: limits, now: 1).get()
        #expect(refusal(ledger.admit("acme", limits: limits, now: 1)) != nil)
        let resumed = try ledger.admit("acme", limits: limits, now: 1, resuming: true).get()
        #expect(ledger.openSessions("acme") == 2)
        withExtendedLifetime((first, resumed)) {}
    }

    @Test func theSessionRateRefillsEvenlyAndSaysWhenToRetry() throws {
        let ledger = TenantLedger()
        let limits = TenantLimits(sessionsPerMinute: 6)
        let second: UInt64 = 1_000_000_000
        for _ in 0..<6 { _ = try ledger.admit("acme", limits: limits, now: second).get() }
        // Six a minute is one every ten seconds.
        #expect(refusal(ledger.admit("acme", limits: limits, now: second)) == TenantRefusal(reason: .rate, retryAfterSeconds: 10))
        #expect(refusal(ledger.admit("acme", limits: limits, now: 5 * second)) == TenantRefusal(reason: .rate, retryAfterSeconds: 6))
        #expect((try? ledger.admit("acme", limits: limits, now: 11 * second).get()) != nil)
    }

    @Test func metricsNameTheFirstTenantsAndSumTheRest() throws {
        let ledger = TenantLedger()
        ledger.configure(metricsTenants: 2)
        var leases: [TenantLease] = []
        for name in ["a", "b", "c", "d\"quote"] { leases.append(try ledger.admit(name, limits: TenantLimits(), now: 1).get()) }
        let text = ledger.render()
        #expect(text.contains(#"parley_tenant_sessions_open{tenant="a"} 1"#))
        #expect(text.contains(#"parley_tenant_sessions_open{tenant="b"} 1"#))
        #expect(text.contains(#"parley_tenant_sessions_open{tenant="_other"} 2"#))
        #expect(!text.contains(#"tenant="c""#))
        leases.removeAll()
        #expect(ledger.render().contains(#"parley_tenant_sessions_open{tenant="_other"} 0"#))
        // A tenant's name is escaped as a label value (Metrics' `PrometheusText.escape`).
        let quoting = TenantLedger()
        let held = try quoting.admit("d\"q", limits: TenantLimits(), now: 1).get()
        #expect(quoting.render().contains(#"parley_tenant_sessions_open{tenant="d\"q"} 1"#))
        withExtendedLifetime(held) {}
    }

    /// The tenant's model tokens a minute: replies spend them after they are done (the bucket may
    /// go below zero), and while it is empty new sessions are refused and the lease says so.
    @Test func spentTokensRefuseNewSessionsUntilTheBudgetRefills() throws {
        let ledger = TenantLedger()
        let limits = TenantLimits(tokensPerMinute: 600)
        let second: UInt64 = 1_000_000_000
        let lease = try ledger.admit("acme", limits: limits, now: second).get()
        ledger.spend(900, of: "acme", perMinute: 600, now: second)
        // 301 short at ten a second: 31 s until one token is there again.
        #expect(refusal(ledger.admit("acme", limits: limits, now: second)) == TenantRefusal(reason: .tokens, retryAfterSeconds: 31))
        #expect(ledger.tokensWait("acme", limits: limits, now: second) == 31)
        #expect((try? ledger.admit("acme", limits: limits, now: 32 * second).get()) != nil)
        // A shared count's answer stands in for the process's own bucket.
        ledger.tokensBack("acme", inSeconds: 5, now: 40 * second)
        #expect(refusal(ledger.admit("acme", limits: limits, now: 41 * second))?.reason == .tokens)
        #expect((try? ledger.admit("acme", limits: limits, now: 46 * second).get()) != nil)
        withExtendedLifetime(lease) {}
    }
}
