import JSON
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

    @Test func anEndedLineStaysFoundWithItsStoryAndHowItEnded() throws {
        let loop = try EventLoop(handle: LoopHandle(index: 0))
        let line = CallLine(id: "rtc_line_listed", on: loop)
        #expect(CallDirectory.shared.find(line.id) == nil)
        line.list()
        line.moved(to: .ringing)
        line.progress(#"{"type":"transport.ringing","call_id":"rtc_line_listed"}"#)
        line.moved(to: .answered)
        line.progress(#"{"type":"transport.answered","call_id":"rtc_line_listed"}"#)
        line.end(reason: "busy")
        line.end(reason: "later")  // once
        line.moved(to: .answered)  // an ended call stays ended
        // Kept readable (`KeptCalls`): found, its story and its end in the document `GET` answers.
        #expect(CallDirectory.shared.find(line.id) != nil)
        let document = line.document()
        #expect(document["status"]?.string == "ended" && document["ended_reason"]?.string == "busy")
        #expect(document["events"]?.array?.map { $0["type"]?.string ?? "" } == ["transport.ringing", "transport.answered"])
    }

    @Test func aStoryKeepsAtMostItsLimit() throws {
        let loop = try EventLoop(handle: LoopHandle(index: 0))
        let line = CallLine(id: "rtc_line_long", on: loop)
        let before = line.heapBytes
        for n in 0..<200 { line.keep(#"{"type":"transport.dtmf.sent","event":"\#(n % 10)"}"#) }
        #expect(line.document()["events"]?.array?.count == 64)
        #expect(line.heapBytes > before)
    }

    @Test func anEndedLineLeavesAnotherListedUnderItsIdAlone() throws {
        let loop = try EventLoop(handle: LoopHandle(index: 0))
        let first = CallLine(id: "sess_line_reused", on: loop)
        let second = CallLine(id: "sess_line_reused", on: loop)
        first.list()
        second.list()
        first.end(reason: "hangup")
        CallDirectory.shared.remove("sess_line_reused", first)
        #expect(CallDirectory.shared.find("sess_line_reused") != nil)
        CallDirectory.shared.remove("sess_line_reused", second)
        #expect(CallDirectory.shared.find("sess_line_reused") == nil)
    }

    @Test func aLineCountsItselfAndTheSidebandsThatWait() throws {
        let loop = try EventLoop(handle: LoopHandle(index: 0))
        let line = CallLine(id: "rtc_line_bytes", on: loop)
        #expect(line.heapBytes >= MemoryLayout<Int>.size * 4)
    }
}
