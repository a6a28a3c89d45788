import JSON
import Media
import SIP
@testable import Telephony
import Testing

/// Whether an INVITE that begins a call is taken (`SIPInviteAdmission`), driven with messages, the
/// calls held and clocks of the test's: every refusal scripts/tests/sip-call-test.sh provokes end
/// to end (a stranger's address, a trunk's digest, a flood, a G.729-only offer) and the rest (the
/// calls held, a Call-ID again, a body that is not SDP or not readable, SRTP's rules), each with
/// its status, reason and the headers that say what would do.
@Suite struct SIPInviteAdmissionTests {
    static let second: UInt64 = 1_000_000_000
    static let caller = TransportAddress(octets: [127, 0, 0, 1], port: 5062)!
    static let stranger = TransportAddress(octets: [192, 0, 2, 9], port: 5062)!
    static let authenticator = SIPDigestAuthenticator(realm: "parley", key: Array(repeating: 7, count: 32))
    static let inline = Base64.encode(Array(0..<30).map { UInt8($0 * 7 & 0xFF) })

    static func sdp(_ media: String = "m=audio 49170 RTP/AVP 0 101\r\na=rtpmap:101 telephone-event/8000\r\n") -> String {
        "v=0\r\no=alice 7 1 IN IP4 127.0.0.1\r\ns=call\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n\(media)"
    }

    static let savp = sdp("m=audio 49170 RTP/SAVP 0 101\r\na=rtpmap:101 telephone-event/8000\r\na=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:\(inline)\r\n")

    static func invite(callID: String = "call-1@example.com", body: String? = sdp(), contentType: String = "application/sdp",
                       extra: [String] = []) throws -> SIPMessage {
        var lines = ["INVITE sip:agent@127.0.0.1 SIP/2.0", "Via: SIP/2.0/UDP 127.0.0.1:5062;branch=z9hG4bKinv1", "Max-Forwards: 70",
                     "From: \"Alice\" <sip:alice@example.com>;tag=a1", "To: <sip:agent@127.0.0.1>", "Call-ID: \(callID)", "CSeq: 10 INVITE",
                     "Contact: <sip:alice@127.0.0.1:5062>"] + extra
        if let body { lines += ["Content-Type: \(contentType)", "Content-Length: \(body.utf8.count)", "", body] } else { lines += ["Content-Length: 0", "", ""] }
        return try SIPMessage(datagram: Array(lines.joined(separator: "\r\n").utf8))
    }

    static func admission(_ change: (inout SIPEndpoint.Settings) -> Void = { _ in }) -> SIPInviteAdmission {
        var settings = SIPEndpoint.Settings()
        change(&settings)
        return SIPInviteAdmission(settings: settings, authenticator: authenticator)
    }

    static func refusal(_ verdict: SIPInviteAdmission.Verdict) -> SIPInviteAdmission.Refusal? {
        if case .refuse(let refusal) = verdict { refusal } else { nil }
    }

    /// The offer and key of a call taken, or nil when it was refused.
    static func taken(_ verdict: SIPInviteAdmission.Verdict) -> (callID: String, offer: PhoneAudioOffer?, crypto: SDESCrypto?)? {
        if case .accept(let callID, let offer, let crypto) = verdict { (callID, offer?.0, crypto) } else { nil }
    }

    static func admit(_ admission: inout SIPInviteAdmission, _ invite: SIPMessage, from source: TransportAddress = caller, overTLS: Bool = false,
                      calls: [String: Int] = [:], now: UInt64 = 0, wallSeconds: UInt64 = 1_000) -> SIPInviteAdmission.Verdict {
        admission.admit(invite, from: source, overTLS: overTLS, calls: calls, now: now, wallSeconds: wallSeconds)
    }

    @Test func aCallFromAnAllowedSourceIsTakenWithItsOfferAndNoKey() throws {
        var admission = Self.admission()
        let taken = try #require(Self.taken(Self.admit(&admission, try Self.invite())))
        #expect(taken.callID == "call-1@example.com" && taken.offer?.codec == .pcmu && taken.crypto == nil)
        #expect(admission.rate.count == 1)
    }

    /// A stranger is told 403 before anything else, and does not count towards the flood limit.
    @Test func aSourceOutsideTheAllowListIsForbiddenAndNotCounted() throws {
        var admission = Self.admission()
        let refused = try #require(Self.refusal(Self.admit(&admission, try Self.invite(), from: Self.stranger)))
        #expect(refused == SIPInviteAdmission.Refusal(status: 403, reason: .sourceNotAllowed, phrase: "Forbidden (source address not allowed)"))
        #expect(admission.rate.count == 0)
        var wide = Self.admission { $0.allowedSources = [AddressRange("192.0.2.0/24")!] }
        #expect(Self.taken(Self.admit(&wide, try Self.invite(), from: Self.stranger)) != nil)
    }

    /// Section 22: with trunks, an INVITE without an answer is challenged (SHA-256, then MD5); one
    /// that answers with a trunk's password is taken; an answer to a nonce past its lifetime is
    /// challenged again with stale=true; a wrong password is challenged afresh.
    @Test func withTrunksTheDigestIsAskedForAndChecked() throws {
        var admission = Self.admission { $0.trunks = ["trunk1": "secret"] }
        let challenged = try #require(Self.refusal(Self.admit(&admission, try Self.invite(), wallSeconds: 1_000)))
        #expect(challenged.status == 401 && challenged.reason == .unauthorized && challenged.phrase == nil)
        let challenges = challenged.headers.compactMap { $0.name == "WWW-Authenticate" ? SIPDigestChallenge($0.value) : nil }
        #expect(challenges.map(\.algorithm) == [.sha256, .md5] && challenges.allSatisfy { !$0.stale })
        #expect(admission.rate.count == 0, "a challenge is not counted")

        func answered(_ password: String) throws -> SIPMessage {
            let answer = SIPDigestCredentials.answering(challenges[1], method: "INVITE", uri: "sip:agent@127.0.0.1", username: "trunk1",
                                                        password: password, cnonce: "c0ffee")
            return try Self.invite(extra: ["Authorization: \(answer.headerValue)"])
        }
        #expect(Self.taken(Self.admit(&admission, try answered("secret"), wallSeconds: 1_010)) != nil)
        let stale = try #require(Self.refusal(Self.admit(&admission, try answered("secret"), wallSeconds: 1_000 + 301)))
        #expect(stale.status == 401 && stale.headers.compactMap { SIPDigestChallenge($0.value) }.allSatisfy(\.stale))
        let wrong = try #require(Self.refusal(Self.admit(&admission, try answered("guess"), wallSeconds: 1_010)))
        #expect(wrong.status == 401 && wrong.headers.count == 2 && !wrong.headers.compactMap { SIPDigestChallenge($0.value) }.contains(where: \.stale))
    }

    /// `--sip-max-invites`: a window of one second from its first INVITE; past the limit, 503
    /// with Retry-After (section 21.5.4), and the next window takes calls again.
    @Test func theFloodLimitIsAWindowOfOneSecond() throws {
        var admission = Self.admission { $0.maxInvitesPerSecond = 2 }
        let invite = try Self.invite()
        #expect(Self.taken(Self.admit(&admission, invite, now: 10 * Self.second)) != nil)
        #expect(Self.taken(Self.admit(&admission, invite, now: 10 * Self.second + Self.second / 2)) != nil)
        let flooded = try #require(Self.refusal(Self.admit(&admission, invite, now: 11 * Self.second - 1)))
        #expect(flooded == SIPInviteAdmission.Refusal(status: 503, reason: .rateLimited, headers: [SIPHeader("Retry-After", "5")]))
        #expect(Self.taken(Self.admit(&admission, invite, now: 11 * Self.second)) != nil)
        #expect(admission.rate.count == 1 && admission.rate.windowStarted == 11 * Self.second)
    }

    /// `--sip-max-calls` held: 503 busy; a Call-ID already held: 482 (section 8.2.2.2).
    @Test func pastTheCallsHeldIsBusyAndACallIDHeldIsALoop() throws {
        var admission = Self.admission { $0.maxCallsPerLoop = 2 }
        let busy = try #require(Self.refusal(Self.admit(&admission, try Self.invite(), calls: ["a": 1, "b": 2])))
        #expect(busy == SIPInviteAdmission.Refusal(status: 503, reason: .busy, headers: [SIPHeader("Retry-After", "5")]))
        let again = try #require(Self.refusal(Self.admit(&admission, try Self.invite(), calls: ["call-1@example.com": 1])))
        #expect(again == SIPInviteAdmission.Refusal(status: 482, reason: .badRequest, phrase: "Loop Detected"))
    }

    /// Section 13.3.1.1 and RFC 3264 section 5: no offer is taken (Parley offers); a body that is
    /// not SDP is 415 with Accept, unreadable SDP 400, an offer of nothing Parley speaks 488 with
    /// the Warning that says why.
    @Test func theOfferIsReadOrRefusedWithWhatWouldDo() throws {
        var admission = Self.admission()
        let none = try #require(Self.taken(Self.admit(&admission, try Self.invite(body: nil))))
        #expect(none.offer == nil && none.crypto == nil)
        let text = try #require(Self.refusal(Self.admit(&admission, try Self.invite(body: "hello", contentType: "text/plain"))))
        #expect(text == SIPInviteAdmission.Refusal(status: 415, reason: .badRequest, phrase: "Unsupported Media Type", headers: [SIPHeader("Accept", "application/sdp")]))
        let unreadable = try #require(Self.refusal(Self.admit(&admission, try Self.invite(body: "v=0\r\nnonsense\r\n"))))
        #expect(unreadable == SIPInviteAdmission.Refusal(status: 400, reason: .badRequest, phrase: "Bad Request (unreadable SDP)"))
        let g729 = try #require(Self.refusal(Self.admit(&admission, try Self.invite(body: Self.sdp("m=audio 49170 RTP/AVP 18\r\na=rtpmap:18 G729/8000\r\n")))))
        #expect(g729.status == 488 && g729.reason == .noCommonCodec && g729.phrase == "Not Acceptable Here")
        #expect(g729.headers.map(\.name) == ["Warning"] && g729.headers.first?.value.hasPrefix("304 parley \"") == true)
    }

    /// RFC 4568 section 8.3: SDES keys only over TLS; `--sip-srtp required` takes no plain call,
    /// and offers a key of its own to a caller that offers nothing over TLS.
    @Test func srtpKeysAreTakenAndGivenOnlyOverTLS() throws {
        var optional = Self.admission()
        let overUDP = try #require(Self.refusal(Self.admit(&optional, try Self.invite(body: Self.savp))))
        #expect(overUDP.status == 488 && overUDP.reason == .srtp && overUDP.headers.first?.value.contains("only on calls signalled over TLS") == true)
        let overTLS = try #require(Self.taken(Self.admit(&optional, try Self.invite(body: Self.savp), overTLS: true)))
        #expect(overTLS.offer?.crypto != nil && overTLS.crypto != nil && overTLS.crypto != overTLS.offer?.crypto)
        #expect(try #require(Self.taken(Self.admit(&optional, try Self.invite(body: nil), overTLS: true))).crypto == nil)

        var required = Self.admission { $0.srtp = .required }
        let plainCalls: [(body: String?, overTLS: Bool)] = [(Self.sdp(), true), (nil, false)]
        for (body, tls) in plainCalls {
            let plain = try #require(Self.refusal(Self.admit(&required, try Self.invite(body: body), overTLS: tls)))
            #expect(plain.status == 488 && plain.reason == .srtp && plain.headers.first?.value.contains("SRTP only") == true)
        }
        #expect(try #require(Self.taken(Self.admit(&required, try Self.invite(body: nil), overTLS: true))).crypto != nil)
    }

    /// A draining server takes no new call: 503 with Retry-After (issue 73), after who may call
    /// (a stranger is still 403), and the refused INVITE does not count towards the rate.
    @Test func aDrainingServerRefusesNewCallsWith503AndRetryAfter() throws {
        var admission = Self.admission()
        let refused = try #require(Self.refusal(admission.admit(try Self.invite(), from: Self.caller, overTLS: false, calls: [String: Int](),
                                                                now: 0, wallSeconds: 1_000, draining: true)))
        #expect(refused.status == 503 && refused.reason == .draining && refused.headers.contains { $0.name == "Retry-After" })
        #expect(admission.rate.count == 0)
        let stranger = try #require(Self.refusal(admission.admit(try Self.invite(), from: Self.stranger, overTLS: false, calls: [String: Int](),
                                                                 now: 0, wallSeconds: 1_000, draining: true)))
        #expect(stranger.status == 403)
    }
}
