import Synchronization
import Testing
@testable import Loop
#if canImport(Glibc)
import Glibc
#endif

/// A loop on a test's clock (issue 50): time moves only when the test says, from one due timer to
/// the next, and never while work the loop waits on is out.
@Suite struct ManualClockTests {
    /// What the loop did, with the clock's time, for the test's thread to read.
    final class Journal: Sendable {
        private let entries = Mutex<[String]>([])
        func add(_ entry: String) { entries.withLock { $0.append(entry) } }
        var all: [String] { entries.withLock { $0 } }
    }

    /// Runs a loop on `clock` in a thread of its own; `setUp` runs first, on the loop.
    final class LoopThread: Sendable {
        let handle: LoopHandle
        private let thread: pthread_t

        init(clock: ManualClock, setUp: @escaping @Sendable (EventLoop) -> Void) throws {
            let handle = try LoopHandle(index: 0, clock: .manual(clock))
            self.handle = handle
            thread = try Thread.spawn(name: "manual-clock-loop") {
                guard let loop = try? EventLoop(handle: handle) else { return }
                setUp(loop)
                loop.run()
            }
        }

        func stop() {
            handle.requestStop()
            Thread.join(thread)
        }
    }

    static func ms(_ nanoseconds: UInt64, from start: UInt64) -> Int { Int((nanoseconds - start) / 1_000_000) }

    @Test func timersFireAtTheirTimeOnTheClockAndNotBefore() throws {
        let clock = ManualClock()
        let start = clock.nanoseconds()
        let journal = Journal()
        let loop = try LoopThread(clock: clock) { loop in
            for after in [0.030, 0.050] {
                loop.schedule(after: after) { journal.add("\(Int(after * 1000)) at \(Self.ms(loop.nanoseconds(), from: start))") }
            }
        }
        defer { loop.stop() }
        #expect(clock.settle())
        #expect(journal.all.isEmpty)
        #expect(clock.advance(milliseconds: 40))
        #expect(journal.all == ["30 at 30"])
        #expect(clock.advance(milliseconds: 10))
        #expect(journal.all == ["30 at 30", "50 at 50"])
        #expect(Self.ms(clock.nanoseconds(), from: start) == 50)
    }

    /// Work offloaded to a pool holds the clock: however long it takes in real time, the clock
    /// moves on only once its completion has run on the loop, so what it then schedules is timed
    /// from the instant it was asked for.
    @Test func offloadedWorkHoldsTheClockUntilItsCompletionHasRun() throws {
        let clock = ManualClock()
        let start = clock.nanoseconds()
        let journal = Journal()
        let pool = try WorkerPool(name: "manual-clock-pool", threads: 1, queueLimit: 4)
        defer { pool.stop() }
        let loop = try LoopThread(clock: clock) { loop in
            _ = loop.offload(to: pool, { () -> Int in
                usleep(150_000)
                return 7
            }) { value in
                journal.add("answered \(value) at \(Self.ms(loop.nanoseconds(), from: start))")
                loop.schedule(after: 0.010) { journal.add("then at \(Self.ms(loop.nanoseconds(), from: start))") }
            }
        }
        defer { loop.stop() }
        #expect(clock.advance(milliseconds: 5))
        #expect(journal.all == ["answered 7 at 0"])
        #expect(clock.advance(milliseconds: 4))
        #expect(journal.all == ["answered 7 at 0"])
        #expect(clock.advance(milliseconds: 1))
        #expect(journal.all == ["answered 7 at 0", "then at 10"])
    }
}
