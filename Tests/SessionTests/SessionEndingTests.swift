import Server
@testable import Session
import Testing

/// How a session ended is the session's own enumeration; the WebSocket carrier says it as a close
/// code and reads one back. The report and trace carry the same numbers as they always have.
@Suite struct SessionEndingTests {
    @Test(arguments: [1000, 1001, 1002, 1003, 1005, 1006, 1007, 1008, 1009, 1011, 1012, 1013, 3000, 4321] as [UInt16])
    func everyCloseCodeComesBackAsItWent(code: UInt16) {
        let ending = SessionEnding(WebSocketCloseCode(rawValue: code))
        #expect(ending.code == code)
        #expect(WebSocketCloseCode(ending).rawValue == code)
    }

    @Test func theEndingsACarrierSaysHaveTheirMeaningsNotJustNumbers() {
        #expect(SessionEnding(.normal) == .ended)
        #expect(SessionEnding(.goingAway) == .wentAway)
        #expect(SessionEnding(.abnormal) == .dropped)
        #expect(SessionEnding(.policyViolation) == .policy)
        #expect(SessionEnding(.serviceRestart) == .serverRestart)
        #expect(SessionEnding(.protocolError) == .closed(code: 1002))
        #expect(SessionEnding.ended.reportReason == "closed by the client")
        #expect(SessionEnding.dropped.reportReason == "the connection dropped")
        #expect(SessionEnding.closed(code: 1005).reportReason == "closed without a status")
        #expect(SessionEnding.closed(code: 4321).reportReason == "closed with 4321")
    }
}
