import Testing
@testable import Server

/// The close, ping and idle rules of an upgraded connection, path by path through RFC 6455
/// section 7 (and the keepalive of section 5.5.2).
@Suite struct WebSocketCloseMachineTests {
    static let timing = WebSocketCloseMachine.Timing(idleTicks: 300, pingTicks: 100, closeTicks: 50)

    func machine(now: UInt32 = 0) -> WebSocketCloseMachine {
        WebSocketCloseMachine(now: now)
    }

    // MARK: Open

    @Test func upgradeSetsTheTimerToTheIdleDeadline() {
        let m = machine()
        #expect(WebSocketCloseMachine.initialTimer(Self.timing) == 300)
        #expect(m.state == .open)
        #expect(m.isOpen)
    }

    @Test func openConnectionDeliversDataAndAnswersPings() {
        var m = machine()
        let delivered = m.dataReceived()
        #expect(delivered)
        #expect(m.pingReceived() == .sendPong)
        #expect(m.state == .open)
    }

    // MARK: 7.1.1 Close the WebSocket Connection: the server closes TCP first

    @Test func afterAnsweringThePeersCloseTheServerHalfClosesWithoutWaiting() {
        var m = machine()
        #expect(m.closeReceived(.normal) == .sendClose(.normal, reason: "", then: .finish))
        #expect(m.state == .closeReceived)
        #expect(m.isFinishing)
    }

    @Test func peersAnswerToOurCloseCompletesTheHandshakeAndTheServerHalfCloses() {
        var m = machine()
        _ = m.closeRequested(.normal, reason: "done", timing: Self.timing)
        #expect(m.closeReceived(.normal) == .finish)
        #expect(m.state == .closeReceived)
    }

    @Test func lingerAfterTheHandshakeIsBoundedByTheTimer() {
        var m = machine()
        _ = m.closeReceived(.normal)
        #expect(m.timerFired(now: 1000, timing: Self.timing) == .drop)
    }

    // MARK: 7.1.2 Start the WebSocket Closing Handshake

    @Test func closeRequestSendsOurCloseAndAwaitsThePeersForCloseTicks() {
        var m = machine()
        #expect(m.closeRequested(.normal, reason: "bye", timing: Self.timing) == .sendClose(.normal, reason: "bye", then: .awaitPeer(ticks: 50)))
        #expect(m.state == .closeSent)
        #expect(m.reportedCode == .normal)
    }

    @Test func closeRequestCarriesApplicationCodesAndReasons() {
        var m = machine()
        let code = WebSocketCloseCode(rawValue: 4000)
        #expect(m.closeRequested(code, reason: "session over", timing: Self.timing) == .sendClose(code, reason: "session over", then: .awaitPeer(ticks: 50)))
        #expect(m.reportedCode == code)
    }

    // MARK: 7.1.3 The Closing Handshake is Started: no more data sent or delivered

    @Test func afterOurCloseNoDataIsSentDeliveredOrPonged() {
        var m = machine()
        _ = m.closeRequested(.normal, reason: "", timing: Self.timing)
        #expect(!m.isOpen)
        let delivered = m.dataReceived()
        #expect(!delivered)
        #expect(m.pingReceived() == .none)
    }

    @Test func afterThePeersCloseNoDataIsSentDeliveredOrPonged() {
        var m = machine()
        _ = m.closeReceived(.normal)
        #expect(!m.isOpen)
        let delivered = m.dataReceived()
        #expect(!delivered)
        #expect(m.pingReceived() == .none)
    }

    @Test func afterAProtocolFailureNoDataIsSentDeliveredOrPonged() {
        var m = machine()
        _ = m.protocolFailed(.protocolError, reason: "reserved opcode")
        #expect(!m.isOpen)
        let delivered = m.dataReceived()
        #expect(!delivered)
        #expect(m.pingReceived() == .none)
    }

    @Test func closingHandshakeIsNotRestartedByTheApplication() {
        var m = machine()
        _ = m.closeReceived(.normal)
        #expect(m.closeRequested(.goingAway, reason: "late", timing: Self.timing) == .none)
        #expect(m.shutdownRequested(timing: Self.timing) == .none)
        #expect(m.reportedCode == .normal)
    }

    // MARK: 7.1.4 The WebSocket Connection is Closed

    @Test func endedConnectionIsClosedAndInert() {
        var m = machine()
        m.connectionEnded()
        #expect(m.state == .closed)
        #expect(!m.isOpen)
        let delivered = m.dataReceived()
        #expect(!delivered)
        #expect(m.pingReceived() == .none)
        #expect(m.closeReceived(.normal) == .none)
        #expect(m.protocolFailed(.protocolError, reason: "late") == .none)
        #expect(m.closeRequested(.normal, reason: "", timing: Self.timing) == .none)
        #expect(m.shutdownRequested(timing: Self.timing) == .none)
        #expect(m.timerFired(now: 1, timing: Self.timing) == .drop)
    }

    @Test func cleanlyClosedConnectionKeepsItsCode() {
        var m = machine()
        _ = m.closeReceived(.goingAway)
        m.connectionEnded()
        #expect(m.state == .closed)
        #expect(m.reportedCode == .goingAway)
    }

    @Test func overflowAfterTheConnectionEndedRecordsNothing() {
        var m = machine()
        m.connectionEnded()
        #expect(m.outboundOverflowed(timing: Self.timing) == .drop)
        #expect(m.reportedCode == .abnormal)
    }

    // MARK: 7.1.5 / 7.1.6 Close code and reason

    @Test func peerCloseIsEchoedWithItsCode() {
        var m = machine()
        let code = WebSocketCloseCode(rawValue: 4001)
        #expect(m.closeReceived(code) == .sendClose(code, reason: "", then: .finish))
        #expect(m.reportedCode == code)
    }

    @Test(arguments: [WebSocketCloseCode.normal, .goingAway, .protocolError, .unsupportedData, .invalidPayload,
                      .policyViolation, .messageTooBig, .internalError, .tryAgainLater])
    func everyValidPeerCodeIsEchoed(_ code: WebSocketCloseCode) {
        var m = machine()
        #expect(m.closeReceived(code) == .sendClose(code, reason: "", then: .finish))
    }

    @Test func emptyPeerCloseIsAnsweredEmptyAndReports1005() {
        var m = machine()
        #expect(m.closeReceived(.noStatus) == .sendClose(nil, reason: "", then: .finish))
        #expect(m.reportedCode == .noStatus)
    }

    @Test func reportedCodeIsTheFirstCloseSentEvenWhenThePeerAnswersAnother() {
        var m = machine()
        _ = m.closeRequested(.goingAway, reason: "", timing: Self.timing)
        _ = m.closeReceived(.normal)
        m.connectionEnded()
        #expect(m.reportedCode == .goingAway)
    }

    @Test func reportedCodeIsTheFirstCloseReceivedEvenWhenTheApplicationClosesLater() {
        var m = machine()
        _ = m.closeReceived(WebSocketCloseCode(rawValue: 4002))
        _ = m.closeRequested(.normal, reason: "", timing: Self.timing)
        _ = m.protocolFailed(.protocolError, reason: "")
        _ = m.outboundOverflowed(timing: Self.timing)
        #expect(m.reportedCode == WebSocketCloseCode(rawValue: 4002))
    }

    @Test func connectionThatEndsWithoutACloseFrameReports1006() {
        var m = machine()
        #expect(m.reportedCode == .abnormal)
        m.connectionEnded()
        #expect(m.reportedCode == .abnormal)
    }

    // MARK: 7.1.7 Fail the WebSocket Connection

    @Test func protocolFailureSendsItsCodeAndReasonThenFinishesWithoutWaiting() {
        var m = machine()
        #expect(m.protocolFailed(.protocolError, reason: "reserved opcode") == .sendClose(.protocolError, reason: "reserved opcode", then: .finish))
        #expect(m.state == .closeSent)
        #expect(m.isFinishing)
        #expect(m.reportedCode == .protocolError)
    }

    @Test(arguments: [WebSocketCloseCode.protocolError, .invalidPayload, .messageTooBig])
    func everyFailureCodeTheReaderGivesIsSentAndReported(_ code: WebSocketCloseCode) {
        var m = machine()
        #expect(m.protocolFailed(code, reason: "why") == .sendClose(code, reason: "why", then: .finish))
        #expect(m.reportedCode == code)
    }

    @Test func failedConnectionDoesNotProcessThePeersAnsweringClose() {
        var m = machine()
        _ = m.protocolFailed(.invalidPayload, reason: "text message is not valid UTF-8")
        #expect(m.closeReceived(.normal) == .none)
        #expect(m.state == .closeSent)
        #expect(m.reportedCode == .invalidPayload)
    }

    @Test func failureAfterOurCloseFinishesWithoutWaitingForThePeer() {
        var m = machine()
        _ = m.closeRequested(.normal, reason: "", timing: Self.timing)
        #expect(m.protocolFailed(.protocolError, reason: "fragmented control frame") == .finish)
        #expect(m.isFinishing)
        #expect(m.closeReceived(.normal) == .none)
        #expect(m.reportedCode == .normal)
    }

    @Test func failureAfterTheHandshakeChangesNothing() {
        var m = machine()
        _ = m.closeReceived(.normal)
        #expect(m.protocolFailed(.protocolError, reason: "frame after close") == .none)
        #expect(m.reportedCode == .normal)
    }

    @Test func failedConnectionThatOutlivesItsTimerIsDropped() {
        var m = machine()
        _ = m.protocolFailed(.protocolError, reason: "")
        #expect(m.timerFired(now: 300, timing: Self.timing) == .drop)
    }

    // MARK: 7.2.1 Client-initiated closure: the peer goes away without a close

    @Test func peerThatVanishesWithoutACloseReports1006() {
        var m = machine()
        _ = m.dataReceived()
        m.trafficReceived(now: 10)
        m.connectionEnded()
        #expect(m.state == .closed)
        #expect(m.reportedCode == .abnormal)
    }

    @Test func peerThatVanishesAfterOurCloseReportsOurCode() {
        var m = machine()
        _ = m.shutdownRequested(timing: Self.timing)
        m.connectionEnded()
        #expect(m.reportedCode == .goingAway)
    }

    // MARK: 7.2.2 Server-initiated abnormal closure

    @Test func unansweredPingDropsTheConnectionWith1006() {
        var m = machine()
        #expect(m.timerFired(now: 300, timing: Self.timing) == .sendPing(thenTimeout: 100))
        #expect(m.timerFired(now: 400, timing: Self.timing) == .drop)
        m.connectionEnded()
        #expect(m.reportedCode == .abnormal)
    }

    @Test func unansweredCloseDropsTheConnectionAfterCloseTicks() {
        var m = machine()
        #expect(m.closeRequested(.normal, reason: "", timing: Self.timing) == .sendClose(.normal, reason: "", then: .awaitPeer(ticks: 50)))
        m.trafficReceived(now: 20)  // data the peer sent before seeing our close is no answer
        #expect(m.timerFired(now: 50, timing: Self.timing) == .drop)
        m.connectionEnded()
        #expect(m.reportedCode == .normal)
    }

    /// Told why in a close frame (which the connection lets past the cap), then dropped when the
    /// close's deadline passes unanswered, as a client that does not read will leave it.
    @Test func clientThatDoesNotReadIsToldWhyWith1008ThenDropped() {
        var m = machine()
        #expect(m.outboundOverflowed(timing: Self.timing) == .sendClose(.policyViolation, reason: WebSocketCloseMachine.outboundCapReason, then: .awaitPeer(ticks: 50)))
        #expect(m.state == .closeSent)
        #expect(m.timerFired(now: 50, timing: Self.timing) == .drop)
        m.connectionEnded()
        #expect(m.reportedCode == .policyViolation)
    }

    @Test func aClientThatOverflowsAgainWhileBeingToldIsDroppedAtOnce() {
        var m = machine()
        _ = m.outboundOverflowed(timing: Self.timing)
        #expect(m.outboundOverflowed(timing: Self.timing) == .drop)
        m.connectionEnded()
        #expect(m.reportedCode == .policyViolation)
    }

    @Test func overflowKeepsACloseCodeAlreadyGiven() {
        var m = machine()
        _ = m.shutdownRequested(timing: Self.timing)
        #expect(m.outboundOverflowed(timing: Self.timing) == .drop)
        #expect(m.reportedCode == .goingAway)
    }

    // MARK: 7.3 Normal closure, both directions

    @Test func serverInitiatedNormalClosure() {
        var m = machine()
        #expect(m.closeRequested(.normal, reason: "done", timing: Self.timing) == .sendClose(.normal, reason: "done", then: .awaitPeer(ticks: 50)))
        #expect(m.closeReceived(.normal) == .finish)
        m.connectionEnded()
        #expect(m.state == .closed)
        #expect(m.reportedCode == .normal)
    }

    @Test func clientInitiatedNormalClosure() {
        var m = machine()
        #expect(m.closeReceived(.normal) == .sendClose(.normal, reason: "", then: .finish))
        m.connectionEnded()
        #expect(m.state == .closed)
        #expect(m.reportedCode == .normal)
    }

    @Test func simultaneousClosesCompleteTheHandshakeOnce() {
        var m = machine()
        _ = m.closeRequested(.normal, reason: "", timing: Self.timing)
        #expect(m.closeReceived(.normal) == .finish)
        #expect(m.closeReceived(.normal) == .none)
    }

    // MARK: 7.4 Status codes: 1005 and 1006 are never sent

    @Test(arguments: [WebSocketCloseCode.noStatus, .abnormal, WebSocketCloseCode(rawValue: 1015), WebSocketCloseCode(rawValue: 999)])
    func codesThatMustNotBeSentGoOutAsAnEmptyClose(_ code: WebSocketCloseCode) {
        var m = machine()
        #expect(m.closeRequested(code, reason: "dropped with the code", timing: Self.timing) == .sendClose(nil, reason: "", then: .awaitPeer(ticks: 50)))
        #expect(m.reportedCode == .noStatus)
    }

    @Test func failureWithACodeThatMustNotBeSentGoesOutEmpty() {
        var m = machine()
        #expect(m.protocolFailed(.abnormal, reason: "no") == .sendClose(nil, reason: "", then: .finish))
    }

    @Test func abnormalEndsSendNoCloseFrameAtAll() {
        var pinged = machine()
        _ = pinged.timerFired(now: 300, timing: Self.timing)
        #expect(pinged.timerFired(now: 400, timing: Self.timing) == .drop)
        var flooded = machine()
        _ = flooded.shutdownRequested(timing: Self.timing)
        #expect(flooded.outboundOverflowed(timing: Self.timing) == .drop)
    }

    // MARK: Idle and ping (RFC 6455 section 5.5.2 keepalive)

    @Test func quietConnectionIsPingedAfterIdleTicks() {
        var m = machine()
        #expect(m.timerFired(now: 300, timing: Self.timing) == .sendPing(thenTimeout: 100))
        #expect(m.isPingOutstanding)
        #expect(m.state == .open)
    }

    @Test func trafficAfterAPingClearsItAndTheConnectionIsNotDropped() {
        var m = machine()
        _ = m.timerFired(now: 300, timing: Self.timing)
        m.trafficReceived(now: 350)
        #expect(!m.isPingOutstanding)
        #expect(m.timerFired(now: 400, timing: Self.timing) == .schedule(ticks: 250))
        #expect(m.timerFired(now: 650, timing: Self.timing) == .sendPing(thenTimeout: 100))
    }

    @Test func recentTrafficReschedulesForTheRemainingIdleTicks() {
        var m = machine()
        m.trafficReceived(now: 120)
        #expect(m.timerFired(now: 300, timing: Self.timing) == .schedule(ticks: 120))
        #expect(!m.isPingOutstanding)
    }

    @Test func trafficOnTheTickItselfWaitsAFullIdlePeriod() {
        var m = machine()
        m.trafficReceived(now: 300)
        #expect(m.timerFired(now: 300, timing: Self.timing) == .schedule(ticks: 300))
    }

    @Test func idleTimeIsMeasuredAcrossTickWraparound() {
        var m = machine(now: UInt32.max - 100)
        m.trafficReceived(now: UInt32.max - 10)
        #expect(m.timerFired(now: 189, timing: Self.timing) == .schedule(ticks: 100))  // 200 quiet ticks across the wrap
        #expect(m.timerFired(now: 289, timing: Self.timing) == .sendPing(thenTimeout: 100))
    }

    @Test func pingsKeepBeingAnsweredWhileOursIsOutstanding() {
        var m = machine()
        _ = m.timerFired(now: 300, timing: Self.timing)
        #expect(m.pingReceived() == .sendPong)
    }

    // MARK: Shutdown and repeated closes

    @Test func shutdownClosesWith1001AndAwaitsThePeer() {
        var m = machine()
        #expect(m.shutdownRequested(timing: Self.timing) == .sendClose(.goingAway, reason: "server shutting down", then: .awaitPeer(ticks: 50)))
        #expect(m.state == .closeSent)
        #expect(m.reportedCode == .goingAway)
    }

    @Test func shutdownAfterTheApplicationClosedIsANoOp() {
        var m = machine()
        _ = m.closeRequested(.normal, reason: "", timing: Self.timing)
        #expect(m.shutdownRequested(timing: Self.timing) == .none)
        #expect(m.reportedCode == .normal)
    }

    @Test func doubleCloseRequestIsANoOp() {
        var m = machine()
        _ = m.closeRequested(.normal, reason: "first", timing: Self.timing)
        #expect(m.closeRequested(.goingAway, reason: "second", timing: Self.timing) == .none)
        #expect(m.state == .closeSent)
        #expect(m.reportedCode == .normal)
    }

    @Test func secondPeerCloseIsIgnored() {
        var m = machine()
        _ = m.closeReceived(.normal)
        #expect(m.closeReceived(.goingAway) == .none)
        #expect(m.state == .closeReceived)
        #expect(m.reportedCode == .normal)
    }
}
