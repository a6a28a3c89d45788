import Loop
import Testing
import TestSupport

/// A SIP call's memory is in `parley_accounted_bytes` (issue 71, item 4): a real `parley serve`
/// on the test's clock answers a phone over UDP; while the call is up its carrier's account holds
/// the call (its dialog, its INVITE and SDP, its media and jitter buffer, its session), and once
/// the phone hangs up it holds nothing. The figure against the heap is `make bench-density`'s.
@Suite(.serialized) struct SIPCallAccountTests {
    static let sip = "parley_accounted_bytes_by_carrier{carrier=\"sip\"}"

    @Test func anOpenCallIsAccountedUnderSIPAndNothingOnceItEnds() throws {
        let port = try RedisServer.freePort()
        let server = try ServerProcess(arguments: "--sip-port \(port) --sip-host 127.0.0.1 --sip-allow 127.0.0.1/32", clocked: true)
        let clock = try #require(server.clock)
        #expect(server.metric(Self.sip) == 0)
        let phone = try TestPhone(sipPort: port)
        try phone.call(clock)
        // A second of the caller's silence: the session's audio input and the jitter buffer in use.
        for _ in 0..<50 {
            try phone.send([Int16](repeating: 0, count: 160))
            _ = phone.nextFrame()
            #expect(clock.advance(milliseconds: 20))
        }
        let open = try #require(server.metric(Self.sip))
        let total = try #require(server.metric("parley_accounted_bytes"))
        print("one SIP call: \(Int(open)) B accounted under sip, \(Int(total)) B in all")
        // The INVITE and its SDP alone are about 1 KiB; the session's engine and input several more.
        #expect(open >= 4_096, "a call up is accounted \(Int(open)) B")
        #expect(total >= open)

        try phone.hangUp()
        for _ in 0..<10 { #expect(clock.advance(milliseconds: 20)) }
        #expect(server.metric(Self.sip) == 0, "the ended call still accounted \(server.metric(Self.sip) ?? -1) B")
    }
}
