import Loop
import Session
import Testing

/// A call's line (`CallLine`): what reaches a call by its id, one object from its offer or
/// placement to its end, whichever carrier holds it meanwhile.
struct CallLineTests {
    final class Carrier: CallCarrier {
        var actions: [String] = []
        func control(_ action: CallControl) { actions.append("\(action)") }
    }

    @Test func callControlGoesToWhicheverCarrierHoldsTheLineNow() throws {
        let loop = try EventLoop(handle: LoopHandle(index: 0))
        let line = CallLine(id: "rtc_line_carrier", on: loop)
        let dialer = Carrier(), call = Carrier()
        line.carrier = dialer
        line.control(.hangUp)
        // Answered: the call the dialer became takes the line over; its id is unchanged.
        line.carrier = call
        line.control(.refer(target: "tel:+15557654321"))
        #expect(dialer.actions == ["hangUp"])
        #expect(call.actions.count == 1 && call.actions[0].hasPrefix("refer"))
    }

    @Test func aListedLineIsFoundByItsIdUntilItEnds() throws {
        let loop = try EventLoop(handle: LoopHandle(index: 0))
        let line = CallLine(id: "rtc_line_listed", on: loop)
        #expect(CallDirectory.shared.find(line.id) == nil)
        line.list()
        #expect(CallDirectory.shared.find(line.id) != nil)
        line.end()
        #expect(line.hasEnded)
        #expect(CallDirectory.shared.find(line.id) == nil)
        line.end()  // once
        #expect(line.hasEnded)
    }

    @Test func anEndedLineLeavesAnotherListedUnderItsIdAlone() throws {
        let loop = try EventLoop(handle: LoopHandle(index: 0))
        let first = CallLine(id: "sess_line_reused", on: loop)
        let second = CallLine(id: "sess_line_reused", on: loop)
        first.list()
        second.list()
        first.end()
        #expect(CallDirectory.shared.find("sess_line_reused") != nil)
        second.end()
        #expect(CallDirectory.shared.find("sess_line_reused") == nil)
    }

    @Test func aLineCountsItselfAndTheSidebandsThatWait() throws {
        let loop = try EventLoop(handle: LoopHandle(index: 0))
        let line = CallLine(id: "rtc_line_bytes", on: loop)
        #expect(line.heapBytes >= MemoryLayout<Int>.size * 4)
    }
}
