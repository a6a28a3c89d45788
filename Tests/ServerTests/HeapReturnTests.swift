import Testing
@testable import Server

/// When freed memory goes back to the system: after a wave of closes, once, not for the coming and
/// going of a few connections.
@Suite struct HeapReturnTests {
    @Test func aWaveOfClosesSchedulesOneTrim() {
        var heap = HeapReturn()
        for open in 1...15_000 { heap.opened(open: open) }
        var scheduled = 0
        for open in stride(from: 14_999, through: 0, by: -1) where heap.closed(open: open) { scheduled += 1 }
        #expect(scheduled == 1)
        heap.trimmed(open: 0)
        #expect(heap.peak == 0 && !heap.pending)
    }

    @Test func theTrimWaitsForHalfThePeakToHaveGone() {
        var heap = HeapReturn()
        for open in 1...10_000 { heap.opened(open: open) }
        // 1,000 closed out of 10,000: a wave, but most connections are still there.
        let early = [heap.closed(open: 9_000), heap.closed(open: 5_001)]
        let half = heap.closed(open: 5_000)
        #expect(early == [false, false] && half)
    }

    @Test func aFewConnectionsComingAndGoingNeverTrim() {
        var heap = HeapReturn()
        var trims = 0
        for _ in 0..<10_000 {
            heap.opened(open: 50)
            if heap.closed(open: 0) { trims += 1 }
        }
        var busy = HeapReturn()
        for _ in 0..<10_000 {
            busy.opened(open: 900)
            if busy.closed(open: 300) { trims += 1 }
        }
        #expect(trims == 0)
    }

    /// The last of a smaller wave closing leaves the loop idle: trimmed once.
    @Test func theLastOfSixtyFourClosingTrimsOnce() {
        var heap = HeapReturn()
        heap.opened(open: 100)
        let closes = (0..<100).reversed().map { heap.closed(open: $0) }
        #expect(closes.filter { $0 }.count == 1 && closes.last == true)
        heap.trimmed(open: 0)
        heap.opened(open: 10)
        let few = heap.closed(open: 0)
        #expect(!few)
    }

    @Test func afterATrimTheNextWaveCountsFromWhatWasLeft() {
        var heap = HeapReturn()
        heap.opened(open: 4_000)
        let first = heap.closed(open: 1_000)
        heap.trimmed(open: 1_000)
        heap.opened(open: 3_000)
        let tooFew = heap.closed(open: 2_000)
        let second = heap.closed(open: 1_500)
        #expect(first && !tooFew && second)
    }
}
