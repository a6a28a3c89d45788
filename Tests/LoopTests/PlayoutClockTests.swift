@testable import Loop
import Testing

/// The loop's playout clock on a real loop: a client that ends without leaving is let go at its
/// slot's next tick, and the clock stops waking once nothing is on it.
@Suite struct PlayoutClockTests {
    final class Client: PlayoutClient {
        var sends = 0
        var plays = 0
        let endsAfter: Int
        init(endsAfter: Int) { self.endsAfter = endsAfter }
        var playoutEnded: Bool { sends >= endsAfter }
        func send(dueBy now: UInt64, nextTick: UInt64) { sends += 1 }
        func play(dueBy now: UInt64, nextTick: UInt64) { plays += 1 }
    }

    @Test func aClientThatEndsWithoutLeavingIsLetGoAndTheClockStops() throws {
        let short = Client(endsAfter: 3), long = Client(endsAfter: 6)
        let loop = try EventLoop(handle: LoopHandle(index: 0))
        let clock = PlayoutClock.on(loop)
        _ = clock.add(short)
        _ = clock.add(long)
        // Looked at every 10 ms until both have gone, for at most 10 s.
        var held: (Int, Bool) = (-1, true)
        var looks = 0
        func look() {
            looks += 1
            if long.playoutEnded && clock.clients == 0 || looks > 1_000 {
                held = (clock.clients, clock.isRunning)
                return loop.stop()
            }
            loop.schedule(after: 0.01) { look() }
        }
        look()
        loop.run()
        #expect(looks <= 1_000, "the clients were still held")
        #expect(held.0 == 0 && !held.1, "the clock held \(held.0) clients, running: \(held.1)")
        // Each was ticked until it ended, and not after: its last tick sent, then found it over.
        #expect(short.sends == 3 && long.sends == 6)
        #expect(short.plays == 2 && long.plays == 5)
    }

    /// Work a client's play leaves for the tick's end (the calls' VAD windows) runs once, after
    /// the clients of that tick have played, and the clock is out of its tick afterwards.
    final class Staging: PlayoutClient, PlayoutTickEnd {
        unowned let clock: PlayoutClock
        let record: Record
        let name: String
        var ticks = 0
        init(_ name: String, clock: PlayoutClock, record: Record) {
            self.name = name
            self.clock = clock
            self.record = record
        }
        var playoutEnded: Bool { ticks >= 1 }
        func play(dueBy now: UInt64, nextTick: UInt64) {
            ticks += 1
            record.lines.append("play \(name)")
            clock.whenTickEnds(self)
        }
        func tickEnded() { record.lines.append("end \(name) \(clock.isTicking)") }
    }

    final class Record {
        var lines: [String] = []
    }

    @Test func workLeftForTheTicksEndRunsOnceAfterItsClientsPlayed() throws {
        let loop = try EventLoop(handle: LoopHandle(index: 0))
        let clock = PlayoutClock.on(loop)
        let record = Record()
        let a = Staging("a", clock: clock, record: record), b = Staging("b", clock: clock, record: record)
        _ = clock.add(a)
        _ = clock.add(b)
        var looks = 0
        func look() {
            looks += 1
            if a.ticks >= 1 && b.ticks >= 1 || looks > 1_000 { return loop.stop() }
            loop.schedule(after: 0.005) { look() }
        }
        look()
        loop.run()
        #expect(!clock.isTicking)
        // Each told once, still in its tick, after its own play.
        #expect(record.lines.filter { $0.hasPrefix("end") }.sorted() == ["end a true", "end b true"], "\(record.lines)")
        for (index, line) in record.lines.enumerated() where line.hasPrefix("end") {
            #expect(record.lines[..<index].contains("play \(line.split(separator: " ")[1])"))
        }
    }
}
