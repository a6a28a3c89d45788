import Glibc
import Loop
import Testing
@testable import Access

/// The workers' shared table, as two workers and their supervisor see it through one file: one
/// count per tenant whichever worker admits, a rate bucket shared the same way, a dead worker's
/// column cleared, and idle tenants' slots taken over when the table is crowded.
@Suite struct WorkerTenantTableTests {
    final class Directory {
        let path: String
        init() throws { path = try Sys.makeTemporaryDirectory(prefix: "parley-tenants-test-") }
        deinit {
            unlink(path + "/tenants")
            rmdir(path)
        }
    }

    func admitted(_ verdict: SharedVerdict) -> SharedPlace? {
        if case .admitted(let place) = verdict { place } else { nil }
    }

    func refusal(_ verdict: SharedVerdict) -> TenantRefusal? {
        if case .refused(let refusal) = verdict { refusal } else { nil }
    }

    @Test func twoWorkersShareOneCountAndADeadWorkersSessionsAreCleared() throws {
        let directory = try Directory()
        let supervisor = try WorkerTenantTable.create(directory.path + "/tenants", workers: 2, slots: 64)
        let first = try WorkerTenantTable.open(directory.path + "/tenants", workers: 2, worker: 0, slots: 64)
        let second = try WorkerTenantTable.open(directory.path + "/tenants", workers: 2, worker: 1, slots: 64)
        let limits = TenantLimits(maxSessions: 3)
        var places = [admitted(first.admit("acme", limits: limits, now: 1)), admitted(second.admit("acme", limits: limits, now: 1)),
                      admitted(second.admit("acme", limits: limits, now: 1))]
        #expect(places.allSatisfy { $0 != nil })
        #expect(refusal(first.admit("acme", limits: limits, now: 1)) == TenantRefusal(reason: .sessions, retryAfterSeconds: 1))
        #expect(admitted(first.admit("globex", limits: limits, now: 1)) != nil, "another tenant has its own count")
        places.removeFirst()?.release()
        #expect(first.openSessions("acme") == 2)
        #expect(admitted(first.admit("acme", limits: limits, now: 1)) != nil)
        // The second worker dies: its two sessions went with it.
        supervisor.clear(worker: 1)
        #expect(first.openSessions("acme") == 1)
        // Its late releases (a worker that was only thought dead) never take the count below zero.
        for place in places { place?.release() }
        #expect(first.openSessions("acme") == 1)
        // A table made for other workers is refused, not misread.
        #expect(throws: SystemError.self) { try WorkerTenantTable.open(directory.path + "/tenants", workers: 3, worker: 0, slots: 64) }
    }

    @Test func theRateIsOneBucketForAllWorkers() throws {
        let directory = try Directory()
        let supervisor = try WorkerTenantTable.create(directory.path + "/tenants", workers: 2, slots: 64)
        let workers = try (0..<2).map { try WorkerTenantTable.open(directory.path + "/tenants", workers: 2, worker: $0, slots: 64) }
        let limits = TenantLimits(sessionsPerMinute: 6)
        let second: UInt64 = 1_000_000_000
        for index in 0..<6 { #expect(admitted(workers[index % 2].admit("acme", limits: limits, now: second)) != nil) }
        #expect(refusal(workers[1].admit("acme", limits: limits, now: second)) == TenantRefusal(reason: .rate, retryAfterSeconds: 10))
        #expect(admitted(workers[0].admit("acme", limits: limits, now: 11 * second)) != nil)
        withExtendedLifetime(supervisor) {}
    }

    @Test func tokensSpentOnOneWorkerRefuseSessionsOnTheOther() throws {
        let directory = try Directory()
        let supervisor = try WorkerTenantTable.create(directory.path + "/tenants", workers: 2, slots: 64)
        let workers = try (0..<2).map { try WorkerTenantTable.open(directory.path + "/tenants", workers: 2, worker: $0, slots: 64) }
        let limits = TenantLimits(tokensPerMinute: 1_000)
        let place = admitted(workers[0].admit("acme", limits: limits, now: MonotonicClock.nanoseconds()))
        #expect(place != nil)
        let loop = try EventLoop(handle: LoopHandle(index: 0))
        var spent: SpendVerdict?
        workers[0].spend(1_500, of: "acme", perMinute: 1_000, on: loop) { spent = $0 }
        guard case .spent(let wait?)? = spent else { Issue.record("\(String(describing: spent))"); return }
        #expect((30...31).contains(wait), "\(wait)")
        #expect(refusal(workers[1].admit("acme", limits: limits, now: MonotonicClock.nanoseconds()))?.reason == .tokens)
        withExtendedLifetime((supervisor, place)) {}
    }

    @Test func aCrowdedTableTakesOverIdleTenantsAndElseSaysItIsFull() throws {
        let directory = try Directory()
        let supervisor = try WorkerTenantTable.create(directory.path + "/tenants", workers: 1, slots: 4)
        let worker = try WorkerTenantTable.open(directory.path + "/tenants", workers: 1, worker: 0, slots: 4)
        let limits = TenantLimits(maxSessions: 1)
        var held = (0..<4).map { worker.admit("tenant-\($0)", limits: limits, now: 1) }
        #expect(held.allSatisfy { admitted($0) != nil })
        guard case .unavailable = worker.admit("tenant-5", limits: limits, now: 2) else { Issue.record("a full table admitted"); return }
        // One tenant closes its session and stays quiet past a minute: its slot is reused.
        if case .admitted(let place) = held.removeFirst() { place.release() }
        let later = 2 + WorkerTenantTable.idleReuseNanoseconds + MonotonicClock.nanoseconds()
        #expect(admitted(worker.admit("tenant-5", limits: limits, now: later)) != nil)
        #expect(worker.openSessions("tenant-5") == 1)
        withExtendedLifetime((supervisor, held)) {}
    }
}
