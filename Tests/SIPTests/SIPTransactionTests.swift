import Testing
@testable import SIP

/// The four transaction machines of RFC 3261 section 17, every path with its timers.
@Suite struct SIPTransactionTests {
    static let ms: UInt64 = 1_000_000
    static let timers = SIPTimers()

    static func request(_ method: String, branch: String = "z9hG4bK74bf9", host: String = "pc33.example.com") -> SIPMessage {
        try! SIPMessage(datagram: sip(
            "\(method) sip:bob@example.com SIP/2.0", "Via: SIP/2.0/UDP \(host);branch=\(branch)", "Max-Forwards: 70",
            "To: <sip:bob@example.com>", "From: <sip:alice@example.com>;tag=9fxced76sl", "Call-ID: 3848276298220188511@example.com",
            "CSeq: 2 \(method)",
            "Route: <sip:proxy.example.com;lr>", ""))
    }

    static func response(to request: SIPMessage, _ status: Int) -> SIPMessage {
        SIPMessage.response(to: request, status: status, toTag: status > 100 ? "314159" : nil)
    }

    static func sent(_ actions: [SIPTransactionAction]) -> [Int] {
        actions.compactMap { if case .send(let message) = $0 { message.status ?? 0 } else { nil } }
    }

    // MARK: INVITE server (section 17.2.1)

    @Test func anInviteServerSendsTryingAndHandsTheInviteOver() {
        let invite = Self.request("INVITE")
        var transaction = SIPServerInviteTransaction(request: invite, reliable: false)
        let actions = transaction.start()
        #expect(Self.sent(actions) == [100])
        #expect(actions.last == .deliver(invite))
        #expect(transaction.state == .proceeding && transaction.nextDeadline == nil)
        let again = transaction.receive(request: invite, now: 0)
        #expect(Self.sent(again) == [100])
    }

    @Test func anInviteServerResendsTheLatestProvisionalThenHoldsA2xxUntilTimerL() {
        let invite = Self.request("INVITE")
        var transaction = SIPServerInviteTransaction(request: invite, reliable: false)
        _ = transaction.start()
        _ = transaction.respond(Self.response(to: invite, 180), now: 0)
        #expect(Self.sent(transaction.receive(request: invite, now: 10 * Self.ms)) == [180])
        let ok = transaction.respond(Self.response(to: invite, 200), now: 20 * Self.ms)
        #expect(Self.sent(ok) == [200] && transaction.state == .accepted)
        #expect(transaction.nextDeadline == 20 * Self.ms + 32_000 * Self.ms)
        // RFC 6026: the INVITE sent again (its 100 or 2xx lost) is this transaction's, not a new
        // request for the TU; it gets the 2xx again. An ACK on its branch goes to the TU.
        #expect(Self.sent(transaction.receive(request: invite, now: 600 * Self.ms)) == [200])
        let ack = Self.request("ACK")
        #expect(transaction.receive(request: ack, now: 700 * Self.ms) == [.deliver(ack)])
        #expect(transaction.respond(Self.response(to: invite, 500), now: 800 * Self.ms).isEmpty)
        #expect(transaction.fire(now: 31_000 * Self.ms).isEmpty)
        #expect(transaction.fire(now: 32_020 * Self.ms) == [.terminated] && transaction.state == .terminated)
    }

    @Test func anInviteServerRetransmitsAFailureOnTimerGUntilTheAck() {
        let invite = Self.request("INVITE")
        var transaction = SIPServerInviteTransaction(request: invite, reliable: false)
        _ = transaction.start()
        #expect(Self.sent(transaction.respond(Self.response(to: invite, 486), now: 0)) == [486])
        #expect(transaction.state == .completed)
        // G: T1, 2T1, 4T1, then capped at T2.
        var now: UInt64 = 0
        var gaps: [UInt64] = []
        for _ in 0..<5 {
            let deadline = transaction.nextDeadline!
            gaps.append((deadline - now) / Self.ms)
            now = deadline
            #expect(Self.sent(transaction.fire(now: now)) == [486])
        }
        #expect(gaps == [500, 1000, 2000, 4000, 4000])
        #expect(Self.sent(transaction.receive(request: invite, now: now)) == [486])
        #expect(transaction.receive(request: Self.request("ACK"), now: now).isEmpty)
        #expect(transaction.state == .confirmed)
        #expect(transaction.nextDeadline == now + 5_000 * Self.ms)
        #expect(transaction.receive(request: Self.request("ACK"), now: now + 1).isEmpty)
        #expect(transaction.fire(now: now + 4_999 * Self.ms).isEmpty)
        #expect(transaction.fire(now: now + 5_000 * Self.ms) == [.terminated])
    }

    @Test func anInviteServerTimesOutOnTimerHWithoutAnAck() {
        let invite = Self.request("INVITE")
        var transaction = SIPServerInviteTransaction(request: invite, reliable: false)
        _ = transaction.start()
        _ = transaction.respond(Self.response(to: invite, 603), now: 0)
        var now: UInt64 = 0
        var ended: [SIPTransactionAction] = []
        while let deadline = transaction.nextDeadline {
            now = deadline
            ended = transaction.fire(now: now)
        }
        #expect(now == 32_000 * Self.ms && ended == [.timeout, .terminated])
    }

    @Test func anInviteServerOverTCPNeverRetransmitsAndEndsOnTheAck() {
        let invite = Self.request("INVITE")
        var transaction = SIPServerInviteTransaction(request: invite, reliable: true)
        _ = transaction.start()
        _ = transaction.respond(Self.response(to: invite, 404), now: 0)
        #expect(transaction.nextDeadline == 32_000 * Self.ms)
        #expect(transaction.receive(request: Self.request("ACK"), now: 1) == [.terminated])
    }

    // MARK: non-INVITE server (section 17.2.2)

    @Test func aNonInviteServerAbsorbsRetransmissionsUntilItAnswersThenResendsTheAnswer() {
        let bye = Self.request("BYE")
        var transaction = SIPServerNonInviteTransaction(request: bye, reliable: false)
        #expect(transaction.start() == [.deliver(bye)])
        #expect(transaction.receive(request: bye, now: 0).isEmpty)
        #expect(Self.sent(transaction.respond(Self.response(to: bye, 200), now: 0)) == [200])
        #expect(Self.sent(transaction.receive(request: bye, now: 100 * Self.ms)) == [200])
        #expect(transaction.nextDeadline == 32_000 * Self.ms)
        #expect(transaction.fire(now: 32_000 * Self.ms) == [.terminated])
        #expect(transaction.state == .terminated)
    }

    @Test func aNonInviteServerResendsItsProvisionalInProceeding() {
        let refer = Self.request("REFER")
        var transaction = SIPServerNonInviteTransaction(request: refer, reliable: true)
        _ = transaction.start()
        _ = transaction.respond(Self.response(to: refer, 100), now: 0)
        #expect(transaction.state == .proceeding)
        #expect(Self.sent(transaction.receive(request: refer, now: 0)) == [100])
        let done = transaction.respond(Self.response(to: refer, 202), now: 0)
        #expect(Self.sent(done) == [202] && done.last == .terminated)
    }

    // MARK: non-INVITE client (section 17.1.2)

    @Test func aNonInviteClientRetransmitsOnTimerEAndGivesUpOnTimerF() {
        let bye = Self.request("BYE")
        var transaction = SIPClientNonInviteTransaction(request: bye, reliable: false)
        #expect(transaction.start(now: 0) == [.send(bye)])
        var now: UInt64 = 0
        var gaps: [UInt64] = []
        var last: [SIPTransactionAction] = []
        while let deadline = transaction.nextDeadline {
            gaps.append((deadline - now) / Self.ms)
            now = deadline
            last = transaction.fire(now: now)
        }
        #expect(Array(gaps.prefix(5)) == [500, 1000, 2000, 4000, 4000])
        #expect(now == 32_000 * Self.ms && last == [.timeout, .terminated])
    }

    @Test func aNonInviteClientResendsEveryT2OnceItHearsAProvisional() {
        let bye = Self.request("BYE")
        var transaction = SIPClientNonInviteTransaction(request: bye, reliable: false)
        _ = transaction.start(now: 0)
        let trying = Self.response(to: bye, 100)
        #expect(transaction.receive(response: trying, now: 100 * Self.ms) == [.deliver(trying)])
        #expect(transaction.fire(now: 500 * Self.ms) == [.send(bye)])
        #expect(transaction.nextDeadline == 4_500 * Self.ms)
    }

    @Test func aNonInviteClientDeliversTheFinalAndAbsorbsItsRetransmissionsUntilTimerK() {
        let bye = Self.request("BYE")
        var transaction = SIPClientNonInviteTransaction(request: bye, reliable: false)
        _ = transaction.start(now: 0)
        let ok = Self.response(to: bye, 200)
        #expect(transaction.receive(response: ok, now: 10) == [.deliver(ok)])
        #expect(transaction.receive(response: ok, now: 20).isEmpty)
        #expect(transaction.nextDeadline == 10 + 5_000 * Self.ms)
        #expect(transaction.fire(now: 10 + 5_000 * Self.ms) == [.terminated])
        var reliable = SIPClientNonInviteTransaction(request: bye, reliable: true)
        _ = reliable.start(now: 0)
        #expect(reliable.nextDeadline == 32_000 * Self.ms)
        #expect(reliable.receive(response: ok, now: 1) == [.deliver(ok), .terminated])
    }

    // MARK: INVITE client (section 17.1.1)

    @Test func anInviteClientRetransmitsOnTimerADoublingAndTimesOutOnTimerB() {
        let invite = Self.request("INVITE")
        var transaction = SIPClientInviteTransaction(request: invite, reliable: false)
        #expect(transaction.start(now: 0) == [.send(invite)])
        var now: UInt64 = 0
        var gaps: [UInt64] = []
        var last: [SIPTransactionAction] = []
        while let deadline = transaction.nextDeadline {
            gaps.append((deadline - now) / Self.ms)
            now = deadline
            last = transaction.fire(now: now)
        }
        #expect(gaps == [500, 1000, 2000, 4000, 8000, 16000, 500])
        #expect(last == [.timeout, .terminated])
    }

    @Test func anInviteClientAcksAFailureAndAcksItsRetransmissionsUntilTimerD() throws {
        let invite = Self.request("INVITE")
        var transaction = SIPClientInviteTransaction(request: invite, reliable: false)
        _ = transaction.start(now: 0)
        let ringing = Self.response(to: invite, 180)
        #expect(transaction.receive(response: ringing, now: 1) == [.deliver(ringing)])
        #expect(transaction.state == .proceeding && transaction.nextDeadline == nil)
        let busy = Self.response(to: invite, 486)
        let actions = transaction.receive(response: busy, now: 2)
        guard case .send(let ack) = actions.first else { Issue.record("no ACK"); return }
        #expect(actions.last == .deliver(busy))
        #expect(ack.method == "ACK" && ack.requestURI == invite.requestURI)
        #expect(try ack.cseq() == SIPCSeq(2, "ACK"))
        #expect(try ack.to().tag == "314159" && ack.values("Via") == [invite.value("Via")!])
        #expect(ack.values("Route") == invite.values("Route"))
        #expect(try SIPMessage(datagram: ack.encoded()) == ack)
        #expect(transaction.receive(response: busy, now: 3) == [.send(ack)])
        #expect(transaction.nextDeadline == 2 + 32_000 * Self.ms)
        #expect(transaction.fire(now: 2 + 32_000 * Self.ms) == [.terminated])
    }

    @Test func anInviteClientHandsA2xxToTheUserAndEnds() {
        let invite = Self.request("INVITE")
        var transaction = SIPClientInviteTransaction(request: invite, reliable: true)
        _ = transaction.start(now: 0)
        #expect(transaction.nextDeadline == 32_000 * Self.ms)
        let ok = Self.response(to: invite, 200)
        #expect(transaction.receive(response: ok, now: 1) == [.deliver(ok), .terminated])
    }

    // MARK: matching (sections 17.1.3, 17.2.3, 9.2)

    @Test func requestsMatchServerTransactionsByBranchSentByAndMethod() throws {
        let invite = Self.request("INVITE")
        let key = try #require(SIPTransactionKey.server(for: invite))
        #expect(SIPTransactionKey.server(for: Self.request("ACK")) == key)
        #expect(SIPTransactionKey.server(for: Self.request("INVITE", host: "other.example.com")) != key)
        #expect(SIPTransactionKey.server(for: Self.request("INVITE", branch: "z9hG4bKother")) != key)
        #expect(SIPTransactionKey.server(for: Self.request("CANCEL")) != key)
        #expect(SIPTransactionKey.invite(cancelledBy: Self.request("CANCEL")) == key)
        #expect(SIPTransactionKey.server(for: Self.request("INVITE", branch: "1234")) == nil)
    }

    @Test func responsesMatchClientTransactionsByBranchAndCSeqMethod() {
        let bye = Self.request("BYE")
        #expect(SIPTransactionKey.client(for: Self.response(to: bye, 200)) == SIPTransactionKey.client(for: bye))
        #expect(SIPTransactionKey.client(for: Self.response(to: Self.request("INVITE"), 200)) != SIPTransactionKey.client(for: bye))
    }
}
