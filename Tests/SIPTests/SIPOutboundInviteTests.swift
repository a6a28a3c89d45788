import Media
import Testing
@testable import SIP

/// A call Parley places, up to its answer (RFC 3261 as the UAC), driven with responses and a clock
/// of the test's: the INVITE and its offer, ringing and early media, the answer's ACK (again for a
/// resent 2xx) and the dialog it makes, a digest challenge answered once, every refusal's reason,
/// and CANCEL when it rings out or Parley hangs up first.
@Suite struct SIPOutboundInviteTests {
    static let local = SIPDialog.Local(contact: "<sip:parley@203.0.113.5:5060>", mediaHost: "203.0.113.5", mediaPort: 40000)
    static let s: UInt64 = 1_000_000_000

    static func call(credentials: (String, String)? = nil, now: UInt64 = 0, ringFor: Int = 30) throws -> SIPOutboundInvite {
        let destination = SIPOutboundInvite.Destination(uri: try #require(SIPURI("sip:+15551234567@trunk.example.com")),
                                                        from: try #require(SIPURI("sip:+15557654321@203.0.113.5")),
                                                        credentials: credentials.map { (username: $0.0, password: $0.1) })
        return SIPOutboundInvite(destination: destination, callID: "out-1@parley", localTag: "p9", local: local, sdpSessionID: 77, now: now, ringFor: ringFor)
    }

    static func sdp(_ version: Int = 1) -> String {
        "v=0\r\no=bob 9 \(version) IN IP4 198.51.100.9\r\ns=call\r\nc=IN IP4 198.51.100.9\r\nt=0 0\r\nm=audio 30000 RTP/AVP 8 101\r\na=rtpmap:101 telephone-event/8000\r\n"
    }

    /// A response to the call's INVITE (`cseq` its number), from the callee's side.
    static func response(_ status: Int, cseq: Int = 1, tag: String? = "b1", body: String = "", extra: [String] = []) throws -> SIPMessage {
        var lines = ["SIP/2.0 \(status) \(SIPStatus.reason(status))", "Via: SIP/2.0/UDP 203.0.113.5:5060;branch=z9hG4bKout1",
                     "From: <sip:+15557654321@203.0.113.5>;tag=p9", "To: <sip:+15551234567@trunk.example.com>" + (tag.map { ";tag=\($0)" } ?? ""),
                     "Call-ID: out-1@parley", "CSeq: \(cseq) INVITE"] + extra
        if status >= 180 && status < 300 { lines += ["Contact: <sip:bob@198.51.100.9:5070>", "Record-Route: <sip:p2.example.com;lr>, <sip:p1.example.com;lr>"] }
        if !body.isEmpty { lines.append("Content-Type: application/sdp") }
        lines += ["Content-Length: \(body.utf8.count)", "", body]
        return try SIPMessage(datagram: Array(lines.joined(separator: "\r\n").utf8))
    }

    static func progress(_ actions: [SIPOutboundInvite.Action]) -> [SIPOutboundInvite.Progress] {
        actions.compactMap { if case .progress(let progress) = $0 { progress } else { nil } }
    }

    @Test func theInviteOffersG711AndEventsFromParleysAddress() throws {
        let call = try Self.call()
        guard case .invite(let invite)? = call.start().first else { Issue.record("no INVITE"); return }
        #expect(invite.method == "INVITE" && invite.requestURI?.description == "sip:+15551234567@trunk.example.com")
        let (from, to, callID) = (try invite.from(), try invite.to(), try invite.callID())
        #expect(from.tag == "p9" && to.tag == nil && callID == "out-1@parley")
        #expect(invite.value("Contact") == Self.local.contact && invite.value("CSeq") == "1 INVITE")
        let offer = try SessionDescription(parsing: invite.body)
        #expect(offer.media.first?.formats == ["0", "8", "101"] && offer.media.first?.port == 40000)
    }

    @Test func ringingEarlyMediaThenTheAnswerAcknowledgedAndItsDialog() throws {
        var call = try Self.call()
        #expect(call.received(try Self.response(100, tag: nil)).isEmpty)
        #expect(Self.progress(call.received(try Self.response(180))) == [.ringing])
        #expect(call.received(try Self.response(180)).isEmpty)
        let early = Self.progress(call.received(try Self.response(183, body: Self.sdp())))
        guard case .earlyMedia(let heard)? = early.first else { Issue.record("no early media: \(early)"); return }
        #expect(heard.codec == .pcma && heard.port == 30000)

        let answered = call.received(try Self.response(200, body: Self.sdp(2)))
        guard case .ack(let ack)? = answered.first, case .answered(let offer)? = Self.progress(answered).first else { Issue.record("\(answered)"); return }
        #expect(offer.codec == .pcma && offer.telephoneEvent == 101)
        // The ACK goes to the answer's Contact through the route set reversed, with the INVITE's number.
        #expect(ack.requestURI?.description == "sip:bob@198.51.100.9:5070" && ack.value("CSeq") == "1 ACK")
        let ackTo = try ack.to()
        #expect(ack.values("Route") == ["<sip:p1.example.com;lr>", "<sip:p2.example.com;lr>"] && ackTo.tag == "b1")
        // A resent 2xx is acknowledged again; nothing else happens.
        #expect(call.received(try Self.response(200, body: Self.sdp(2))) == [.ack(ack)])
        #expect(call.nextDeadline == nil)

        var dialog = try #require(call.dialog())
        #expect(dialog.state == .confirmed)
        // Parley's BYE: from its own URI and tag to the callee's, to its Contact, the next CSeq.
        let bye = dialog.hangUp().compactMap { if case .request(let message) = $0 { message } else { nil } }.first
        #expect(bye?.requestURI?.description == "sip:bob@198.51.100.9:5070" && bye?.value("CSeq") == "2 BYE")
        let byeFrom = try bye?.from(), byeTo = try bye?.to()
        #expect(byeFrom?.tag == "p9" && byeTo?.tag == "b1" && bye?.values("Route").first == "<sip:p1.example.com;lr>")
        // The callee's BYE ends it.
        var other = try #require(call.dialog())
        let theirs = try SIPMessage(datagram: Array(["BYE sip:parley@203.0.113.5:5060 SIP/2.0", "Via: SIP/2.0/UDP 198.51.100.9:5070;branch=z9hG4bKbye",
                                                      "From: <sip:+15551234567@trunk.example.com>;tag=b1", "To: <sip:+15557654321@203.0.113.5>;tag=p9",
                                                      "Call-ID: out-1@parley", "CSeq: 5 BYE", "Content-Length: 0", "", ""].joined(separator: "\r\n").utf8))
        let ended = other.received(theirs, key: try #require(SIPTransactionKey.server(for: theirs)))
        #expect(ended.contains(.ended(.callerBye)))
    }

    @Test func aChallengeIsAnsweredOnceWithTheTrunksCredentials() throws {
        var call = try Self.call(credentials: ("parley", "s3cret"))
        let challenge = "Digest realm=\"trunk.example.com\", nonce=\"abc123\", algorithm=MD5, qop=\"auth\""
        let again = call.received(try Self.response(401, tag: "x", extra: ["WWW-Authenticate: \(challenge)"]))
        guard case .invite(let invite)? = again.first else { Issue.record("not sent again: \(again)"); return }
        #expect(invite.value("CSeq") == "2 INVITE")
        let credentials = try #require(invite.value("Authorization").flatMap(SIPDigestCredentials.init))
        let ha1 = SIPDigest.ha1(username: "parley", realm: "trunk.example.com", password: "s3cret", algorithm: .md5)
        #expect(credentials.username == "parley" && credentials.uri == "sip:+15551234567@trunk.example.com")
        #expect(credentials.response == SIPDigest.response(ha1: ha1, nonce: "abc123", method: "INVITE", uri: credentials.uri, qop: "auth",
                                                           nc: credentials.nc, cnonce: credentials.cnonce, algorithm: .md5))
        // A second challenge is a refusal of those credentials: the call fails, it is not tried forever.
        let refused = call.received(try Self.response(401, cseq: 2, tag: "x", extra: ["WWW-Authenticate: \(challenge)"]))
        #expect(Self.progress(refused) == [.failed(.unauthorized(status: 401))])

        var proxied = try Self.call(credentials: ("parley", "s3cret"))
        let next = proxied.received(try Self.response(407, tag: "x", extra: ["Proxy-Authenticate: \(challenge)"]))
        guard case .invite(let sent)? = next.first else { Issue.record("not sent again: \(next)"); return }
        #expect(sent.value("Proxy-Authorization") != nil && sent.value("Authorization") == nil)

        var without = try Self.call()
        #expect(Self.progress(without.received(try Self.response(401, tag: "x", extra: ["WWW-Authenticate: \(challenge)"]))) == [.failed(.unauthorized(status: 401))])
    }

    @Test func eachRefusalEndsTheCallWithItsReason() throws {
        let cases: [(Int, [String], SIPCallFailure)] = [
            (486, [], .busy), (600, [], .busy), (480, [], .noAnswer), (408, [], .noAnswer), (603, [], .declined(status: 603)),
            (503, ["Retry-After: 120;duration=60"], .unavailable(status: 503, retryAfter: 120)), (404, [], .failed(status: 404)),
        ]
        for (status, extra, failure) in cases {
            var call = try Self.call()
            _ = call.received(try Self.response(180))
            #expect(Self.progress(call.received(try Self.response(status, extra: extra))) == [.failed(failure)], "\(status)")
            #expect(call.received(try Self.response(200, body: Self.sdp())).isEmpty && call.nextDeadline == nil)
        }
        var silent = try Self.call()
        #expect(Self.progress(silent.timedOut()) == [.failed(.unreachable)])
    }

    @Test func aCallThatRingsOutIsCancelledAndToldAtOnce() throws {
        var call = try Self.call(now: 5 * Self.s, ringFor: 20)
        _ = call.received(try Self.response(180))
        #expect(call.nextDeadline == 25 * Self.s)
        #expect(call.fire(now: 24 * Self.s).isEmpty)
        // It rang: CANCEL now, and the application told `no_answer` now, not at the 487.
        let rangOut = call.fire(now: 25 * Self.s)
        #expect(rangOut.first == .cancel && Self.progress(rangOut) == [.failed(.noAnswer)])
        #expect(call.nextDeadline == nil && call.fire(now: 60 * Self.s).isEmpty)
        #expect(!call.isFinished)
        #expect(call.received(try Self.response(487)).isEmpty)
        #expect(call.isFinished)

        // Parley hangs up after a 100; the 2xx that crossed the CANCEL is acknowledged, and it ends.
        var crossed = try Self.call()
        _ = crossed.received(try Self.response(100, tag: nil))
        let hungUp = crossed.hangUp()
        #expect(hungUp.first == .cancel && Self.progress(hungUp) == [.failed(.cancelled)])
        let answered = crossed.received(try Self.response(200, body: Self.sdp()))
        #expect(answered.count == 1 && Self.progress(answered).isEmpty)
        if case .ack = answered.first {} else { Issue.record("the crossing 2xx was not acknowledged") }
        #expect(crossed.isFinished && crossed.dialog() != nil)

        // The CANCEL of the INVITE as sent: its Via, its CSeq number.
        let sent = try SIPMessage(datagram: Array(["INVITE sip:+15551234567@trunk.example.com SIP/2.0", "Via: SIP/2.0/UDP 203.0.113.5:5060;branch=z9hG4bKout1",
                                                    "From: <sip:+15557654321@203.0.113.5>;tag=p9", "To: <sip:+15551234567@trunk.example.com>",
                                                    "Call-ID: out-1@parley", "CSeq: 2 INVITE", "Content-Length: 0", "", ""].joined(separator: "\r\n").utf8))
        let cancel = SIPMessage.cancel(for: sent)
        #expect(cancel.method == "CANCEL" && cancel.value("Via") == sent.value("Via") && cancel.value("CSeq") == "2 CANCEL")
        // The callee matches it to the INVITE's server transaction (section 9.2).
        #expect(SIPTransactionKey.invite(cancelledBy: cancel) == SIPTransactionKey.server(for: sent))
    }

    /// RFC 3261 section 9.1: no CANCEL until a provisional response has come.
    @Test func noCancelGoesBeforeAProvisionalResponse() throws {
        // A hangup with nothing heard: told at once, no CANCEL; the first 1xx brings it.
        var hungUp = try Self.call()
        let first = hungUp.hangUp()
        #expect(first == [.progress(.failed(.cancelled))])
        #expect(hungUp.received(try Self.response(100, tag: nil)) == [.cancel])
        #expect(hungUp.received(try Self.response(487)).isEmpty && hungUp.isFinished)

        // A hangup with nothing heard, then the callee answers: acknowledged, to be hung up.
        var answeredLate = try Self.call()
        _ = answeredLate.hangUp()
        let late = answeredLate.received(try Self.response(200, body: Self.sdp()))
        #expect(late.count == 1 && Self.progress(late).isEmpty && answeredLate.isFinished && answeredLate.dialog() != nil)

        // A hangup with nothing ever heard: timer B ends the transaction, nothing more to tell.
        var silent = try Self.call()
        _ = silent.hangUp()
        #expect(silent.timedOut().isEmpty && silent.isFinished)
    }

    /// A callee that takes the INVITE and says nothing is `unreachable`, whatever the ring time,
    /// with no CANCEL sent; one that rings after the ring time is over is `no_answer`, cancelled.
    @Test func nothingHeardAtAllIsUnreachableAtAnyRingTime() throws {
        var quiet = try Self.call(now: 0, ringFor: 5)
        #expect(quiet.fire(now: 5 * Self.s).isEmpty)
        #expect(quiet.nextDeadline == nil)
        #expect(Self.progress(quiet.timedOut()) == [.failed(.unreachable)])

        var slow = try Self.call(now: 0, ringFor: 5)
        #expect(slow.fire(now: 5 * Self.s).isEmpty)
        let rang = slow.received(try Self.response(180))
        #expect(rang.first == .cancel && Self.progress(rang) == [.failed(.noAnswer)])

        // Rung out unheard, then hung up: `cancelled` is what the application hears.
        var both = try Self.call(now: 0, ringFor: 5)
        _ = both.fire(now: 5 * Self.s)
        #expect(Self.progress(both.hangUp()) == [.failed(.cancelled)])
        #expect(both.timedOut().isEmpty)
    }
}
