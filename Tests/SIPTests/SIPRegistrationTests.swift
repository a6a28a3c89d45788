import Testing
@testable import SIP

/// Registering with a trunk (RFC 3261 section 10.2) as a value, on a clock the test drives.
@Suite struct SIPRegistrationTests {
    static let second: UInt64 = 1_000_000_000

    static func make(credentials: (String, String)? = ("acme-user", "s3cret"), seconds: Int = 600) -> SIPRegistration {
        SIPRegistration(registrar: SIPURI("sip:198.51.100.1:5060")!, addressOfRecord: SIPURI("sip:acme-user@198.51.100.1")!,
                        contact: "<sip:acme-user@203.0.113.5:5060>", callID: "reg1@parley", localTag: "t1", credentials: credentials, seconds: seconds)
    }

    static func sent(_ actions: [SIPRegistration.Action]) -> SIPMessage? {
        for case .send(let message) in actions { return message }
        return nil
    }

    @Test func aChallengeIsAnsweredAndTheGrantIsRefreshedAtHalf() throws {
        var registration = Self.make()
        let first = try #require(Self.sent(registration.start(now: 0)))
        #expect(first.method == "REGISTER" && first.requestURI?.description == "sip:198.51.100.1:5060")
        #expect(first.value("Expires") == "600" && first.value("Contact") == "<sip:acme-user@203.0.113.5:5060>" && first.value("CSeq") == "1 REGISTER")
        var challenge = SIPMessage.response(to: first, status: 401, toTag: "r")
        challenge.add("WWW-Authenticate", #"Digest realm="acme", nonce="abc", qop="auth", algorithm=MD5"#)
        let second = try #require(Self.sent(registration.received(challenge, now: Self.second)))
        let answer = try #require(second.value("Authorization").flatMap(SIPDigestCredentials.init))
        #expect(answer.username == "acme-user" && answer.realm == "acme" && answer.qop == "auth" && second.value("CSeq") == "2 REGISTER")
        #expect(second.value("Call-ID") == "reg1@parley", "one Call-ID for all of ours (section 10.2)")
        // A second challenge for the same attempt is a wrong password.
        var ok = SIPMessage.response(to: second, status: 200, toTag: "r")
        ok.add("Contact", "<sip:acme-user@203.0.113.5:5060>;expires=300")
        #expect(registration.received(ok, now: 2 * Self.second) == [.registered(seconds: 300)])
        #expect(registration.nextDeadline == 2 * Self.second + 150 * Self.second, "refreshed at half the grant")
        #expect(registration.fire(now: 100 * Self.second).isEmpty)
        let refresh = try #require(Self.sent(registration.fire(now: 152 * Self.second)))
        #expect(refresh.value("CSeq") == "3 REGISTER" && refresh.value("Authorization") == nil)
    }

    @Test func refusalsAreRetriedLaterAndATooBriefIntervalAtOnce() throws {
        var registration = Self.make(seconds: 60)
        let first = try #require(Self.sent(registration.start(now: 0)))
        var brief = SIPMessage.response(to: first, status: 423, toTag: "r")
        brief.add("Min-Expires", "120")
        let again = try #require(Self.sent(registration.received(brief, now: 0)))
        #expect(again.value("Expires") == "120" && registration.askedSeconds == 120)
        var unavailable = SIPMessage.response(to: again, status: 503, toTag: "r")
        unavailable.add("Retry-After", "30")
        #expect(registration.received(unavailable, now: 0) == [.failed(status: 503, retryInSeconds: 30)])
        let retried = try #require(Self.sent(registration.fire(now: 30 * Self.second)))
        #expect(registration.received(nil, now: 31 * Self.second) == [.failed(status: nil, retryInSeconds: SIPRegistration.retrySeconds)], "no response: \(retried.value("CSeq") ?? "")")
        // A challenge with no credentials to answer it is a failure, not a loop.
        var bare = Self.make(credentials: nil)
        let request = try #require(Self.sent(bare.start(now: 0)))
        var challenge = SIPMessage.response(to: request, status: 407, toTag: "r")
        challenge.add("Proxy-Authenticate", #"Digest realm="acme", nonce="abc""#)
        #expect(bare.received(challenge, now: 0) == [.failed(status: 407, retryInSeconds: SIPRegistration.retrySeconds)])
    }

    @Test func stoppingRemovesTheContact() throws {
        var registration = Self.make()
        let first = try #require(Self.sent(registration.start(now: 0)))
        _ = registration.received(SIPMessage.response(to: first, status: 200, toTag: "r"), now: 0)
        #expect(registration.state == .registered(until: 600 * Self.second), "no grant in the answer: what was asked")
        let removal = try #require(Self.sent(registration.unregister()))
        #expect(removal.value("Expires") == "0" && registration.nextDeadline == nil)
        #expect(registration.received(SIPMessage.response(to: removal, status: 200, toTag: "r"), now: 0) == [.unregistered])
        var never = Self.make()
        #expect(never.unregister().isEmpty, "nothing to remove before a registration")
    }
}
