import Testing
@testable import Loop

@Suite struct TimerWheelTests {
    @Test func firesEachDeadlineOnceWhenDue() {
        var wheel = TimerWheel(resolutionMilliseconds: 100, buckets: 8, startTick: 0)
        wheel.grow(toSlots: 4)
        wheel.schedule(0, after: 3)
        wheel.schedule(1, after: 5)
        wheel.schedule(2, after: 20)  // more than a full turn of the wheel away
        var fired: [(Int32, UInt32)] = []
        for tick in 1...25 as ClosedRange<UInt32> {
            var expired: [Int32] = []
            wheel.advance(to: tick, expired: &expired)
            fired += expired.map { ($0, tick) }
        }
        #expect(fired.map(\.0) == [0, 1, 2])
        #expect(fired.map(\.1) == [3, 5, 20])
    }

    @Test func cancelledAndRescheduledDeadlinesDoNotFireEarly() {
        var wheel = TimerWheel(resolutionMilliseconds: 100, buckets: 16, startTick: 0)
        wheel.grow(toSlots: 3)
        wheel.schedule(0, after: 2)
        wheel.schedule(1, after: 2)
        wheel.schedule(2, after: 2)
        wheel.cancel(1)
        wheel.schedule(2, after: 10)
        var fired: [Int32] = []
        wheel.advance(to: 5, expired: &fired)
        #expect(fired == [0])
        wheel.advance(to: 12, expired: &fired)
        #expect(fired == [0, 2])
    }

    @Test func catchesUpAfterALongStall() {
        var wheel = TimerWheel(resolutionMilliseconds: 100, buckets: 8, startTick: 0)
        wheel.grow(toSlots: 2)
        wheel.schedule(0, after: 3)
        wheel.schedule(1, after: 7)
        var fired: [Int32] = []
        wheel.advance(to: 1000, expired: &fired)
        #expect(Set(fired) == [0, 1])
    }
}
