import Media
import Testing
@testable import SIP

/// The UAS dialog with its INVITE session (RFC 3261 sections 12 and 13), driven with messages and
/// a clock of the test's: every method and state scripts/tests/sip-call-test.sh covers end to end
/// (answer, the 2xx resent until the ACK, re-INVITE and UPDATE, INFO keys, BYE either way, CANCEL,
/// reject, REFER and its NOTIFYs), and the rules around them.
@Suite struct SIPDialogTests {
    static let local = SIPDialog.Local(contact: "<sip:parley@203.0.113.5:5060>", mediaHost: "203.0.113.5", mediaPort: 40000)
    static let ms: UInt64 = 1_000_000

    static func sdp(_ media: String = "m=audio 49170 RTP/AVP 0 101\r\na=rtpmap:101 telephone-event/8000\r\n", version: Int = 1) -> String {
        "v=0\r\no=alice 7 \(version) IN IP4 198.51.100.7\r\ns=call\r\nc=IN IP4 198.51.100.7\r\nt=0 0\r\n\(media)"
    }

    /// An INVITE from Alice's phone through two proxies (the nearer one, p2, on top).
    static func invite(body: String? = sdp(), extra: [String] = []) throws -> SIPMessage {
        var lines = ["INVITE sip:agent@203.0.113.5 SIP/2.0", "Via: SIP/2.0/UDP 198.51.100.7:5062;branch=z9hG4bKinv1",
                     "Max-Forwards: 70", "From: \"Alice\" <sip:alice@example.com>;tag=a1", "To: <sip:agent@203.0.113.5>",
                     "Call-ID: call-1@example.com", "CSeq: 10 INVITE", "Contact: <sip:alice@198.51.100.7:5062>",
                     "Record-Route: <sip:p2.example.com;lr>, <sip:p1.example.com;lr>", "Session-Expires: 1800"] + extra
        if let body { lines += ["Content-Type: application/sdp", "Content-Length: \(body.utf8.count)", "", body] } else { lines += ["Content-Length: 0", ""] }
        return try SIPMessage(datagram: Array(lines.joined(separator: "\r\n").utf8) + (body == nil ? Array("\r\n".utf8) : []))
    }

    static func dialog(offer: Bool = true) throws -> SIPDialog {
        let invite = try invite(body: offer ? sdp() : nil)
        let given = try offer ? { () throws -> (PhoneAudioOffer, SessionDescription) in
            let parsed = try SessionDescription(parsing: invite.body)
            return (try PhoneAudioOffer(parsed), parsed)
        }() : nil
        return SIPDialog(invite: invite, key: try #require(SIPTransactionKey.server(for: invite)), localTag: "p7", local: local,
                         offer: given, source: "198.51.100.7", sdpSessionID: 42)
    }

    /// A request of the caller's within the dialog.
    static func request(_ method: String, cseq: Int, body: String = "", contentType: String = "application/sdp", branch: String? = nil) throws -> SIPMessage {
        var lines = ["\(method) sip:parley@203.0.113.5:5060 SIP/2.0", "Via: SIP/2.0/UDP 198.51.100.7:5062;branch=\(branch ?? "z9hG4bK\(method)\(cseq)")",
                     "Max-Forwards: 70", "From: \"Alice\" <sip:alice@example.com>;tag=a1", "To: <sip:agent@203.0.113.5>;tag=p7",
                     "Call-ID: call-1@example.com", "CSeq: \(cseq) \(method)"]
        if !body.isEmpty { lines.append("Content-Type: \(contentType)") }
        lines += ["Content-Length: \(body.utf8.count)", "", body]
        return try SIPMessage(datagram: Array(lines.joined(separator: "\r\n").utf8))
    }

    /// Passes `request` to the dialog in its own transaction.
    static func deliver(_ request: SIPMessage, to dialog: inout SIPDialog) throws -> [SIPDialog.Action] {
        dialog.received(request, key: try #require(SIPTransactionKey.server(for: request)))
    }

    static func responses(_ actions: [SIPDialog.Action]) -> [SIPMessage] {
        actions.compactMap { if case .respond(let message, _) = $0 { message } else { nil } }
    }

    static func requests(_ actions: [SIPDialog.Action]) -> [SIPMessage] {
        actions.compactMap { if case .request(let message) = $0 { message } else { nil } }
    }

    static func text(_ message: SIPMessage) -> String { String(decoding: message.encoded(), as: UTF8.self) }

    /// A confirmed dialog (answered at 0, acknowledged).
    static func confirmed() throws -> SIPDialog {
        var dialog = try dialog()
        _ = dialog.accept(now: 0)
        _ = dialog.acknowledged(try request("ACK", cseq: 10))
        return dialog
    }

    @Test func theInviteIsRungThenAnsweredWithItsSDPAnswerAndTheSessionTimer() throws {
        var dialog = try Self.dialog()
        let ringing = try #require(Self.responses(dialog.ring()).first)
        #expect(try ringing.status == 180 && (try ringing.to()).tag == "p7" && ringing.value("Contact") == Self.local.contact)
        let actions = dialog.accept(now: 0)
        let ok = try #require(Self.responses(actions).first)
        #expect(actions.count == 1 && dialog.state == .answered)
        #expect(try ok.status == 200 && (try ok.to()).tag == "p7" && ok.values("Allow").joined(separator: ", ") == SIPDialog.allow)
        #expect(ok.value("Session-Expires") == "1800;refresher=uac" && ok.value("Require") == "timer")
        let answer = String(decoding: ok.body, as: UTF8.self)
        #expect(answer.contains("m=audio 40000 RTP/AVP 0 101\r\n") && answer.contains("c=IN IP4 203.0.113.5\r\n") && answer.contains("o=parley 42 1 "), "\(answer)")
        // Answered once: a second accept, a ring or a reject change nothing.
        #expect(dialog.accept(now: 1).isEmpty && dialog.ring().isEmpty && dialog.reject().isEmpty)
    }

    /// Section 13.3.1.4: T1 doubling to T2 until the ACK, which stops it.
    @Test func theAnswerIsSentAgainUntilItsACK() throws {
        var dialog = try Self.dialog()
        let ok = try #require(Self.responses(dialog.accept(now: 0)).first)
        var resentAt: [UInt64] = []
        while let at = dialog.nextDeadline, at < 8_000 * Self.ms {
            #expect(dialog.fire(now: at) == [.resend(ok)])
            resentAt.append(at / Self.ms)
        }
        #expect(resentAt == [500, 1_500, 3_500, 7_500])
        // Early: nothing.
        #expect(dialog.fire(now: 8_000 * Self.ms).isEmpty)
        #expect(dialog.acknowledged(try Self.request("ACK", cseq: 10)).isEmpty)
        #expect(dialog.state == .confirmed && dialog.nextDeadline == nil)
    }

    @Test func noACKWithin64T1EndsTheDialogWithABye() throws {
        var dialog = try Self.dialog()
        _ = dialog.accept(now: 0)
        var resends = 0
        var last: [SIPDialog.Action] = []
        while let at = dialog.nextDeadline {
            last = dialog.fire(now: at)
            if case .resend? = last.first { resends += 1 } else { #expect(at == 32_000 * Self.ms) }
        }
        #expect(resends == 10)
        let bye = try #require(Self.requests(last).first)
        #expect(last.last == .ended(.noAck) && dialog.state == .ended)
        // Section 12.2.1.1: to the remote target, the route set in order, our tag in From, theirs in To.
        #expect(Self.text(bye).hasPrefix("BYE sip:alice@198.51.100.7:5062 SIP/2.0\r\n"), "\(Self.text(bye))")
        #expect(bye.values("Route") == ["<sip:p2.example.com;lr>", "<sip:p1.example.com;lr>"])
        #expect(try (try bye.from()).tag == "p7" && (try bye.to()).tag == "a1" && bye.value("Call-ID") == "call-1@example.com")
        #expect(bye.value("CSeq") == "2 BYE" && bye.value("Via") == nil && bye.value("Contact") == Self.local.contact)
    }

    @Test func aReofferChangesTheMediaAndTheAnswersVersion() throws {
        var dialog = try Self.confirmed()
        let hold = Self.sdp("m=audio 49170 RTP/AVP 0 101\r\na=rtpmap:101 telephone-event/8000\r\na=sendonly\r\n", version: 2)
        let held = try Self.deliver(try Self.request("INVITE", cseq: 11, body: hold), to: &dialog)
        guard case .media(let offer)? = held.first else { Issue.record("no media change: \(held)"); return }
        #expect(offer.isHold && dialog.offer == offer)
        let ok = try #require(Self.responses(held).first)
        let answer = String(decoding: ok.body, as: UTF8.self)
        #expect(ok.status == 200 && answer.contains("o=parley 42 2 ") && answer.contains("a=recvonly"), "\(answer)")
        // The same offer again (a session refresh): the same answer, no change.
        let refreshed = try Self.deliver(try Self.request("INVITE", cseq: 12, body: hold), to: &dialog)
        #expect(refreshed.count == 1 && String(decoding: Self.responses(refreshed)[0].body, as: UTF8.self).contains("o=parley 42 2 "))
        // An UPDATE without a body: 200 without one; an INVITE without one: our SDP in the 200.
        let update = Self.responses(try Self.deliver(try Self.request("UPDATE", cseq: 13), to: &dialog))
        #expect(update.first?.status == 200 && update.first?.body.isEmpty == true && update.first?.value("Contact") == Self.local.contact)
        let offerless = Self.responses(try Self.deliver(try Self.request("INVITE", cseq: 14), to: &dialog))
        #expect(offerless.first?.status == 200 && String(decoding: offerless.first?.body ?? [], as: UTF8.self).contains("m=audio 40000"))
        // An offer that cannot be read: 488, the media as it was.
        let bad = try Self.deliver(try Self.request("INVITE", cseq: 15, body: "v=0\r\nm=video 1 RTP/AVP 96\r\n"), to: &dialog)
        #expect(bad.count == 1 && Self.responses(bad).first?.status == 488 && dialog.offer == offer)
    }

    @Test func requestsOutOfOrderUnknownOrForOptionsAreAnsweredAsTheRFCSays() throws {
        var dialog = try Self.confirmed()
        let late = Self.responses(try Self.deliver(try Self.request("INFO", cseq: 5), to: &dialog))
        #expect(late.first?.status == 500)
        let unknown = Self.responses(try Self.deliver(try Self.request("MESSAGE", cseq: 11), to: &dialog))
        #expect(unknown.first?.status == 405 && unknown.first?.values("Allow").joined(separator: ", ") == SIPDialog.allow)
        #expect(Self.responses(try Self.deliver(try Self.request("OPTIONS", cseq: 12), to: &dialog)).first?.status == 200)
        #expect(dialog.state == .confirmed)
    }

    @Test func infoCarriesAKey() throws {
        var dialog = try Self.confirmed()
        let actions = try Self.deliver(try Self.request("INFO", cseq: 11, body: "Signal=5\r\nDuration=160\r\n", contentType: "application/dtmf-relay"), to: &dialog)
        #expect(Self.responses(actions).first?.status == 200 && actions.last == .key("5"))
        let empty = try Self.deliver(try Self.request("INFO", cseq: 12), to: &dialog)
        #expect(empty.count == 1)
    }

    @Test func theCallersByeEndsTheDialogOnce() throws {
        var dialog = try Self.confirmed()
        let actions = try Self.deliver(try Self.request("BYE", cseq: 11), to: &dialog)
        #expect(Self.responses(actions).first?.status == 200 && actions.last == .ended(.callerBye) && dialog.state == .ended)
        #expect(dialog.hangUp().isEmpty && dialog.refer(to: "sip:x@y").isEmpty)
    }

    @Test func beforeTheAnswerCancelRejectAndHangUpAnswerTheInvite() throws {
        var cancelled = try Self.dialog()
        let a = cancelled.cancelled()
        #expect(Self.responses(a).first?.status == 487 && a.last == .ended(.cancelled))
        var rejected = try Self.dialog()
        let b = rejected.reject(status: 486)
        #expect(Self.responses(b).first?.status == 486 && b.last == .ended(.rejected))
        var hungUp = try Self.dialog()
        let c = hungUp.hangUp()
        #expect(Self.responses(c).first?.status == 480 && c.last == .ended(.serverBye) && Self.requests(c).isEmpty)
        // After the answer a CANCEL changes nothing (section 9.2).
        var answered = try Self.confirmed()
        #expect(answered.cancelled().isEmpty && answered.state == .confirmed)
    }

    /// RFC 3515: the REFER, then the new call's NOTIFYs; a 2xx sipfrag ends this call with a BYE.
    @Test func aTransferEndsTheCallWhenTheNewOneIsUp() throws {
        var dialog = try Self.confirmed()
        let refer = try #require(Self.requests(dialog.refer(to: "sip:target@198.51.100.9")).first)
        #expect(refer.method == "REFER" && refer.value("Refer-To") == "<sip:target@198.51.100.9>" && refer.value("Referred-By") == Self.local.contact)
        #expect(refer.value("CSeq") == "2 REFER")
        dialog.referAnswered(status: 202, now: 5_000 * Self.ms)
        #expect(dialog.nextDeadline == 37_000 * Self.ms)
        let trying = try Self.deliver(try Self.request("NOTIFY", cseq: 11, body: "SIP/2.0 100 Trying\r\n", contentType: "message/sipfrag"), to: &dialog)
        #expect(trying.count == 1 && dialog.state == .confirmed)
        let up = try Self.deliver(try Self.request("NOTIFY", cseq: 12, body: "SIP/2.0 200 OK\r\n", contentType: "message/sipfrag"), to: &dialog)
        #expect(Self.requests(up).first?.value("CSeq") == "3 BYE" && up.last == .ended(.transferred) && dialog.nextDeadline == nil)
    }

    @Test func aTransferThatNeverFinishesEndsAtItsWaitAndARefusedOneChangesNothing() throws {
        var refused = try Self.confirmed()
        _ = refused.refer(to: "sip:target@198.51.100.9")
        refused.referAnswered(status: 603, now: 0)
        #expect(refused.nextDeadline == nil)
        // Without an accepted REFER, a NOTIFY of 2xx is only answered.
        #expect(try Self.deliver(try Self.request("NOTIFY", cseq: 11, body: "SIP/2.0 200 OK\r\n", contentType: "message/sipfrag"), to: &refused).count == 1)

        var waited = try Self.confirmed()
        _ = waited.refer(to: "sip:target@198.51.100.9")
        waited.referAnswered(status: 202, now: 0)
        #expect(waited.fire(now: SIPDialog.transferWait - 1).isEmpty)
        let ended = waited.fire(now: SIPDialog.transferWait)
        #expect(Self.requests(ended).first?.method == "BYE" && ended.last == .ended(.transferred))

        // The caller's BYE during a transfer is the transfer's end.
        var byed = try Self.confirmed()
        _ = byed.refer(to: "sip:target@198.51.100.9")
        byed.referAnswered(status: 200, now: 0)
        #expect(try Self.deliver(try Self.request("BYE", cseq: 11), to: &byed).last == .ended(.transferred))
    }

    /// RFC 3264 section 5: an INVITE without an offer gets Parley's in the 200, and its answer
    /// comes in the ACK.
    @Test func anInviteWithoutAnOfferGetsOursAndTheAnswerComesInTheACK() throws {
        var dialog = try Self.dialog(offer: false)
        #expect(dialog.offer.port == 0)
        let ok = try #require(Self.responses(dialog.accept(now: 0)).first)
        let ours = String(decoding: ok.body, as: UTF8.self)
        #expect(ours.contains("m=audio 40000 RTP/AVP") && ours.contains("PCMU/8000"), "\(ours)")
        var ack = try Self.request("ACK", cseq: 10, body: Self.sdp("m=audio 49180 RTP/AVP 8\r\n"))
        ack.headers.removeAll { $0.name == "Content-Length" }
        let actions = dialog.acknowledged(try SIPMessage(datagram: ack.encoded()))
        guard case .media(let answer)? = actions.first else { Issue.record("no media: \(actions)"); return }
        #expect(answer.codec == .pcma && answer.port == 49180 && dialog.offer == answer && dialog.state == .confirmed)
    }
}
