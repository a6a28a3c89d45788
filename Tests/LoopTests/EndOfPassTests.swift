import Testing
@testable import Loop

/// The loop's hooks: after each event (where uWebSockets uncorks), and at the end of the pass
/// (Redis's `beforeSleep`): once per pass, after everything the pass handled, before the loop
/// waits again.
@Suite struct EndOfPassTests {
    /// Records what the loop called, in order.
    final class Journal {
        var entries: [String] = []
    }

    /// An eventfd on the loop: each edge is one "read" in the journal.
    final class Watcher: LoopRegistrant {
        let fd: Int32
        let journal: Journal
        var onRead: () -> Void = {}

        init(fd: Int32, journal: Journal) {
            self.fd = fd
            self.journal = journal
        }

        override func readable(hungUp: Bool) {
            Sys.drain(eventfd: fd)
            journal.entries.append("read")
            onRead()
        }
    }

    @Test func hookRunsAfterThePassesEventsReadsAndTimers() throws {
        let loop = try EventLoop(handle: LoopHandle(index: 0))
        let journal = Journal()
        let fd = try Sys.eventfd()
        defer { Sys.close(fd) }
        let watcher = try loop.register(fd, [.readable, .edge]) { _ in Watcher(fd: fd, journal: journal) }
        var passes = 0
        loop.atEndOfPass {
            journal.entries.append("end")
            passes += 1
            if passes == 2 { loop.stop() }
        }
        loop.schedule(after: 0) { journal.entries.append("timer") }
        Sys.signal(eventfd: fd)
        loop.run()
        // The first pass: the event, the timer due now, then the hook; the second pass (nothing
        // ready) still ends with the hook, once.
        #expect(journal.entries == ["read", "timer", "end", "end"])
        _ = watcher
    }

    /// The after-each-event hook runs when each descriptor's callbacks return and after the batch
    /// of timers, before the next event, and before the end-of-pass hooks: where the server writes
    /// what one event produced, so that no reply waits for the rest of the pass.
    @Test func afterEachEventRunsAfterEveryEventAndTheTimersBeforeTheEndOfThePass() throws {
        let loop = try EventLoop(handle: LoopHandle(index: 0))
        let journal = Journal()
        var fds: [Int32] = []
        defer { fds.forEach(Sys.close) }
        for _ in 0..<3 {
            let fd = try Sys.eventfd()
            fds.append(fd)
            _ = try loop.register(fd, [.readable, .edge]) { _ in Watcher(fd: fd, journal: journal) }
            Sys.signal(eventfd: fd)
        }
        loop.afterEachEvent { journal.entries.append("after") }
        loop.atEndOfPass {
            journal.entries.append("end")
            loop.stop()
        }
        loop.schedule(after: 0) { journal.entries.append("timer") }
        loop.schedule(after: 0) { journal.entries.append("timer") }
        loop.run()
        #expect(journal.entries == ["read", "after", "read", "after", "read", "after", "timer", "timer", "after", "end"])
    }

    @Test func hookRunsOncePerPassHoweverManyEventsThePassHandled() throws {
        let loop = try EventLoop(handle: LoopHandle(index: 0))
        let journal = Journal()
        var fds: [Int32] = []
        for _ in 0..<5 {
            let fd = try Sys.eventfd()
            fds.append(fd)
            _ = try loop.register(fd, [.readable, .edge]) { _ in Watcher(fd: fd, journal: journal) }
            Sys.signal(eventfd: fd)
        }
        defer { fds.forEach(Sys.close) }
        loop.atEndOfPass {
            journal.entries.append("end")
            loop.stop()
        }
        loop.run()
        #expect(journal.entries == ["read", "read", "read", "read", "read", "end"])
    }

    @Test func hooksRunInTheOrderAddedAndOnThePassThatStops() throws {
        let loop = try EventLoop(handle: LoopHandle(index: 0))
        let journal = Journal()
        loop.atEndOfPass { journal.entries.append("first") }
        loop.atEndOfPass { journal.entries.append("second") }
        loop.schedule(after: 0) {
            journal.entries.append("timer")
            loop.stop()
        }
        loop.run()
        #expect(journal.entries == ["timer", "first", "second"])
    }

    @Test func aReadQueuedByTheHookRunsOnTheNextPassWithoutWaiting() throws {
        let loop = try EventLoop(handle: LoopHandle(index: 0))
        let journal = Journal()
        let fd = try Sys.eventfd()
        defer { Sys.close(fd) }
        var registration: Registration?
        let watcher = try loop.register(fd, [.readable, .edge]) { made in
            registration = made
            return Watcher(fd: fd, journal: journal)
        }
        var passes = 0
        loop.atEndOfPass {
            passes += 1
            journal.entries.append("end")
            if passes == 1 { loop.readAgain(registration!) }
            if passes == 2 { loop.stop() }
        }
        // Without the queued read, the second pass would sleep until the next timer tick.
        let started = MonotonicClock.nanoseconds()
        Sys.signal(eventfd: fd)
        loop.run()
        #expect(journal.entries == ["read", "end", "read", "end"])
        #expect(MonotonicClock.nanoseconds() - started < MonotonicClock.nanoseconds(0.05))
        _ = watcher
    }
}
