import Glibc
import Testing
import TestSupport

/// A SIP node that drains (SIGTERM) with a call up (issue 73): the call goes on, a new INVITE is
/// refused 503 with Retry-After and a proxy's OPTIONS probe gets the same, and at the drain's
/// bound (`--drain-seconds`, on the test's clock) the call is ended with Parley's BYE and the
/// process exits; before, the loop stopped at once and the call was dropped without a BYE. A
/// WebRTC offer meanwhile is refused 503 `draining`.
@Suite(.serialized) struct SIPDrainTests {
    @Test func aDrainingNodeRefusesNewCallsLetsItsCallGoOnAndEndsItWithABye() throws {
        let port = try RedisServer.freePort()
        let server = try ServerProcess(arguments: "--sip-port \(port) --sip-host 127.0.0.1 --sip-allow 127.0.0.1/32 --drain-seconds 3", clocked: true)
        let clock = try #require(server.clock)
        let phone = try TestPhone(sipPort: port)
        try phone.call(clock)
        #expect(server.metric("parley_sip_calls_open") == 1)

        server.signal(SIGTERM)
        // The signal is read on the loop as it comes, whatever the test's clock says.
        var draining = false
        for _ in 0..<200 where !draining {
            draining = server.metric("parley_draining") == 1
            if !draining { usleep(10_000) }
        }
        #expect(draining, "the server did not start draining")

        // New calls go elsewhere; the probe says so.
        let second = try TestPhone(sipPort: port)
        let refused = try second.ask("INVITE", clock)
        #expect(refused.status.hasPrefix("SIP/2.0 503") && refused.headers.contains { $0.lowercased().hasPrefix("retry-after:") }, "\(refused)")
        let probe = try TestPhone(sipPort: port).ask("OPTIONS", clock)
        #expect(probe.status.hasPrefix("SIP/2.0 503"), "\(probe)")
        // A browser's call likewise (a WebRTC offer: 503 draining, before its SDP is read).
        let browser = try TestClient(port: server.port)
        try browser.send("POST /v1/realtime/calls HTTP/1.1\r\nHost: x\r\nContent-Type: application/sdp\r\nContent-Length: 4\r\n\r\nv=0\n")
        let offer = try browser.readResponse()
        #expect(offer.status == 503 && offer.body.contains("draining"), "\(offer.status) \(offer.body)")

        // The call goes on: its media flows, no BYE, for the drain's three seconds.
        var heard = 0
        var bye = false
        for _ in 0..<100 {
            try phone.send([Int16](repeating: 0, count: 160))
            heard += phone.nextFrame().count
            bye = try bye || phone.receivedBye()
            guard clock.advance(milliseconds: 20) else { break }
        }
        #expect(!bye, "the call was ended before the drain's bound")
        #expect(server.metric("parley_sip_calls_open") == 1)

        // At the bound: Parley's BYE, and the process ends.
        for _ in 0..<100 where !bye {
            bye = try phone.receivedBye()
            if !bye, !clock.advance(milliseconds: 20) { break }
        }
        #expect(bye, "no BYE at the drain's bound")
        var exited: Int32?
        for _ in 0..<100 where exited == nil {
            _ = clock.advance(milliseconds: 20)
            exited = server.waitForExit(seconds: 0.05)
        }
        #expect(exited != nil, "the server did not exit after its drain")
    }
}
