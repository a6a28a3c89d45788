import Testing
@testable import Loop

/// The slab after a wave: the slots past the highest in use are given back, and a registration
/// kept from before the compaction never reaches whatever later takes its slot number.
@Suite struct SlabCompactionTests {
    final class Counter: LoopRegistrant {
        var deadlines = 0
        var reads = 0
        override func deadlinePassed() { deadlines += 1 }
        override func readable(hungUp: Bool) { reads += 1 }
    }

    @Test func slotsPastTheLastInUseAreGivenBackAndStaleRegistrationsMissTheirNewOccupants() throws {
        let loop = try EventLoop(handle: LoopHandle(index: 0))
        let fd = try Sys.eventfd()
        defer { Sys.close(fd) }
        // One long-lived registration first, then a wave of 1,500 each on an eventfd of its own.
        let kept = try loop.register(fd, [.readable, .edge]) { _ in Counter() }
        var wave: [(Int32, Registration)] = []
        for _ in 0..<1_500 {
            let copy = try Sys.eventfd()
            var registration: Registration?
            _ = try loop.register(copy, [.readable, .edge]) { (made: Registration) -> Counter in registration = made; return Counter() }
            wave.append((copy, registration!))
        }
        // Too few free slots past the last in use: nothing to give back yet.
        #expect(loop.compactSlab() == 0)
        for (copy, registration) in wave {
            loop.deregister(registration)
            Sys.close(copy)
        }
        #expect(loop.compactSlab() == 1_500)
        #expect(loop.compactSlab() == 0)

        // A registration from the wave, used late, reaches nothing and does not trap.
        let stale = wave[0].1
        loop.setDeadline(stale, afterTicks: 1)
        loop.readAgain(stale)
        loop.deregister(stale)
        // The slot number is handed out again, to a registrant the stale registration must miss.
        let copy = try Sys.eventfd()
        defer { Sys.close(copy) }
        var fresh: Registration?
        let newcomer = try loop.register(copy, [.readable, .edge]) { (made: Registration) -> Counter in fresh = made; return Counter() }
        #expect(fresh?.slot == stale.slot)
        #expect(fresh?.generation != stale.generation)
        loop.setDeadline(stale, afterTicks: 1)
        loop.readAgain(stale)
        loop.schedule(after: 0.3) { loop.stop() }
        loop.run()
        #expect(newcomer.deadlines == 0 && newcomer.reads == 0)
        _ = kept
    }
}
