import Testing
@testable import Loop

/// The playout clock's slots as a value: which run when, on time, late, and after a stall.
@Suite struct PlayoutScheduleTests {
    static let ms: UInt64 = 1_000_000

    /// Runs the schedule at each of `times` (ms); the slots each run gave.
    static func slots(_ schedule: inout PlayoutSchedule, at times: [UInt64]) -> [[Int]] {
        times.map { time in
            let (first, count) = schedule.run(now: time * ms)
            return (0..<count).map { (first + $0) % PlayoutSchedule.slots }
        }
    }

    @Test func fourSlotsFiveMillisecondsApartEachOnceAPeriod() {
        var schedule = PlayoutSchedule(startingAt: 1_000 * Self.ms)
        #expect((0..<4).map { schedule.nextRun(of: $0) / Self.ms } == [1_005, 1_010, 1_015, 1_020])
        #expect(Self.slots(&schedule, at: [1_005, 1_010, 1_015, 1_020, 1_025]) == [[0], [1], [2], [3], [0]])
        // After slot 0's run at 1,025, slot 0 runs again a period later, the others before it.
        #expect((0..<4).map { schedule.nextRun(of: $0) / Self.ms } == [1_045, 1_030, 1_035, 1_040])
    }

    @Test func aRunLateByMoreThanASlotRunsTheSlotsMissedOnce() {
        var schedule = PlayoutSchedule(startingAt: 0)
        // Due at 5 and 10, run at 12: both now, then slot 2 at 15 as planned.
        #expect(Self.slots(&schedule, at: [12]) == [[0, 1]])
        #expect(schedule.slot == 2)
        #expect(schedule.next == 15 * Self.ms)
    }

    @Test func aTimerThatFiresEarlyRunsNothing() {
        var schedule = PlayoutSchedule(startingAt: 0)
        #expect(Self.slots(&schedule, at: [4]) == [[]])
        #expect(schedule.next == 5 * Self.ms)
    }

    @Test func aStalledLoopRunsEachSlotOnceAndKeepsItsSchedule() {
        var schedule = PlayoutSchedule(startingAt: 0)
        // Stalled from 5 to 57 ms: every slot once (not the ten missed), then the next on the
        // schedule, slot 3 at 60, where it would have been.
        #expect(Self.slots(&schedule, at: [57]) == [[0, 1, 2, 3]])
        #expect(schedule.next == 60 * Self.ms)
        #expect(schedule.slot == 3)
        #expect((0..<4).map { schedule.nextRun(of: $0) / Self.ms } == [65, 70, 75, 60])
        #expect(Self.slots(&schedule, at: [60, 65]) == [[3], [0]])
    }
}
