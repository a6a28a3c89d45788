import Testing
@testable import Session

/// A resumable session tells its client an item is done only once the store keeps it, and sends
/// nothing after that event before it (`KeptBeforeTold`).
@Suite struct KeptBeforeToldTests {
    @Test func framesGoAtOnceWhileNoWriteIsOut() {
        var gate = KeptBeforeTold()
        let text = gate.admit(.text("delta 1"))
        let binary = gate.admit(.binary([1, 2]))
        #expect(text && binary)
        #expect(!gate.isHolding)
    }

    @Test func theCompletionAndEverythingAfterItWaitForTheStoreInOrder() {
        var gate = KeptBeforeTold()
        let before = gate.admit(.text("delta"))
        #expect(before)
        let ticket = gate.writeBegan()
        let done = gate.admit(.text("item.done"))
        let audio = gate.admit(.binary([7]))
        let next = gate.admit(.text("next delta"))
        #expect(!done && !audio && !next)
        #expect(gate.isHolding)
        let released = gate.answered(ticket)
        #expect(released == [.text("item.done"), .binary([7]), .text("next delta")])
        #expect(!gate.isHolding)
        let after = gate.admit(.text("after"))
        #expect(after)
    }

    @Test func twoWritesOutReleaseOnlyWhenBothAreAnswered() {
        var gate = KeptBeforeTold()
        let first = gate.writeBegan()
        _ = gate.admit(.text("item.done"))
        let second = gate.writeBegan()
        _ = gate.admit(.text("response.done"))
        let afterFirst = gate.answered(first)
        #expect(afterFirst.isEmpty)
        let afterSecond = gate.answered(second)
        #expect(afterSecond == [.text("item.done"), .text("response.done")])
    }

    /// An embedded store answers inside the call that wrote: nothing is ever held.
    @Test func aWriteAnsweredAtOnceHoldsNothing() {
        var gate = KeptBeforeTold()
        let ticket = gate.writeBegan()
        let released = gate.answered(ticket)
        #expect(released.isEmpty)
        let sent = gate.admit(.text("item.done"))
        #expect(sent)
    }

    /// The bound passed (Redis away too long): what waits goes, and the answers that come later
    /// do not count against writes begun after.
    @Test func givingUpReleasesAllAndLateAnswersAreIgnored() {
        var gate = KeptBeforeTold()
        let stale = gate.writeBegan()
        _ = gate.admit(.text("item.done"))
        let given = gate.gaveUp()
        #expect(given == [.text("item.done")])
        let fresh = gate.writeBegan()
        _ = gate.admit(.text("response.done"))
        let late = gate.answered(stale)
        #expect(late.isEmpty, "an answer from before giving up must not release what waits on a newer write")
        #expect(gate.isHolding)
        let released = gate.answered(fresh)
        #expect(released == [.text("response.done")])
    }

    /// The client went: what waited is in the replay log, so it is dropped here, but later frames
    /// still wait for the write that is out.
    @Test func theClientLeavingDropsWhatWaitedButNotTheWait() {
        var gate = KeptBeforeTold()
        let ticket = gate.writeBegan()
        _ = gate.admit(.text("item.done"))
        gate.clientLeft()
        #expect(!gate.isHolding)
        let replayed = gate.admit(.text("replayed item.done"))
        #expect(!replayed)
        let released = gate.answered(ticket)
        #expect(released == [.text("replayed item.done")])
    }
}
