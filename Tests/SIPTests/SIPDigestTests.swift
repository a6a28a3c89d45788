import Testing
@testable import SIP

/// Digest authentication against the RFCs' worked examples, and the stateless nonce.
@Suite struct SIPDigestTests {
    @Test func rfc2617WorkedExampleGivesItsResponse() {
        // RFC 2617 section 3.5.
        let ha1 = SIPDigest.ha1(username: "Mufasa", realm: "testrealm@host.com", password: "Circle Of Life", algorithm: .md5)
        let response = SIPDigest.response(ha1: ha1, nonce: "dcd98b7102dd2f0e8b11d0f600bfb0c093", method: "GET", uri: "/dir/index.html",
                                          qop: "auth", nc: "00000001", cnonce: "0a4f113b", algorithm: .md5)
        #expect(response == "6629fae49393a05397450978507c4ef1")
    }

    @Test func rfc7616ExampleGivesItsMD5AndSHA256Responses() {
        // RFC 7616 section 3.9.1, the algorithms RFC 8760 brings to SIP.
        let expected: [SIPDigestAlgorithm: String] = [
            .md5: "8ca523f5e9506fed4657c9700eebdbec",
            .sha256: "753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1",
        ]
        for (algorithm, value) in expected {
            let ha1 = SIPDigest.ha1(username: "Mufasa", realm: "http-auth@example.org", password: "Circle of Life", algorithm: algorithm)
            let response = SIPDigest.response(ha1: ha1, nonce: "7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", method: "GET", uri: "/dir/index.html",
                                              qop: "auth", nc: "00000001", cnonce: "f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ", algorithm: algorithm)
            #expect(response == value)
        }
    }

    @Test func anAuthorizationHeaderParses() throws {
        let value = "Digest username=\"bob\", realm=\"biloxi.com\", nonce=\"dcd98b7102dd2f0e8b11d0f600bfb0c093\", uri=\"sip:bob@biloxi.com\", "
            + "qop=auth, nc=00000001, cnonce=\"0a4f113b\", response=\"6629fae49393a05397450978507c4ef1\", opaque=\"5ccc069c403ebaf9f0171e9517f40e41\""
        let credentials = try #require(SIPDigestCredentials(value))
        #expect(credentials.username == "bob" && credentials.realm == "biloxi.com" && credentials.uri == "sip:bob@biloxi.com")
        #expect(credentials.algorithm == .md5 && credentials.qop == "auth" && credentials.nc == "00000001" && credentials.cnonce == "0a4f113b")
        #expect(SIPDigestCredentials(credentials.headerValue) == credentials)
        #expect(SIPDigestCredentials("Basic dXNlcjpwYXNz") == nil)
        #expect(SIPDigestCredentials("Digest username=\"bob\", realm=\"r\"") == nil)
    }

    @Test func aChallengeWritesAndReadsBack() throws {
        let challenge = SIPDigestChallenge(realm: "parley", nonce: "abc", algorithm: .sha256, opaque: "o", stale: true)
        #expect(challenge.headerValue == "Digest realm=\"parley\", nonce=\"abc\", algorithm=SHA-256, qop=\"auth\", opaque=\"o\", stale=true")
        #expect(SIPDigestChallenge(challenge.headerValue) == challenge)
    }

    static let authenticator = SIPDigestAuthenticator(realm: "parley", key: Array(repeating: 7, count: 32), nonceLifetime: 300)

    /// What a phone answers to `challenge` with `password`.
    static func answer(_ challenge: SIPDigestChallenge, password: String, method: String = "INVITE") -> SIPDigestCredentials {
        let uri = "sip:agent@parley.example.com"
        let ha1 = SIPDigest.ha1(username: "trunk1", realm: challenge.realm, password: password, algorithm: challenge.algorithm)
        let response = SIPDigest.response(ha1: ha1, nonce: challenge.nonce, method: method, uri: uri, qop: "auth", nc: "00000001",
                                          cnonce: "c0ffee", algorithm: challenge.algorithm)
        return SIPDigestCredentials(username: "trunk1", realm: challenge.realm, nonce: challenge.nonce, uri: uri, response: response,
                                    algorithm: challenge.algorithm, qop: "auth", nc: "00000001", cnonce: "c0ffee")
    }

    @Test(arguments: SIPDigestAlgorithm.allCases)
    func theRightPasswordIsAcceptedAndAWrongOneRefused(algorithm: SIPDigestAlgorithm) {
        let challenge = Self.authenticator.challenge(algorithm: algorithm, now: 1_000_000)
        #expect(Self.authenticator.check(Self.answer(challenge, password: "s3cret"), method: "INVITE", password: "s3cret", now: 1_000_010) == .accepted)
        #expect(Self.authenticator.check(Self.answer(challenge, password: "guess"), method: "INVITE", password: "s3cret", now: 1_000_010) == .rejected)
        #expect(Self.authenticator.check(Self.answer(challenge, password: "s3cret", method: "BYE"), method: "INVITE", password: "s3cret", now: 1_000_010) == .rejected)
    }

    @Test func theChallengeOffersSHA256FirstThenMD5OnOneNonce() {
        let challenges = Self.authenticator.challenges(now: 1_000_000)
        #expect(challenges.map(\.algorithm) == [.sha256, .md5])
        #expect(Set(challenges.map(\.nonce)).count == 1)
        // A phone that can only do MD5 answers the second, and is let in.
        #expect(Self.authenticator.check(Self.answer(challenges[1], password: "s3cret"), method: "INVITE", password: "s3cret", now: 1_000_010) == .accepted)
        #expect(Self.authenticator.challenges(now: 1_000_000, stale: true).map(\.stale) == [true, true])
    }

    @Test func anExpiredNonceIsStaleAndAForgedOneRejected() {
        let challenge = Self.authenticator.challenge(now: 1_000_000)
        let answer = Self.answer(challenge, password: "s3cret")
        #expect(Self.authenticator.check(answer, method: "INVITE", password: "s3cret", now: 1_000_300) == .stale)
        var forged = challenge
        forged.nonce = String(challenge.nonce.dropLast()) + (challenge.nonce.hasSuffix("0") ? "1" : "0")
        #expect(Self.authenticator.check(Self.answer(forged, password: "s3cret"), method: "INVITE", password: "s3cret", now: 1_000_001) == .rejected)
        let otherKey = SIPDigestAuthenticator(realm: "parley", key: Array(repeating: 8, count: 32))
        #expect(otherKey.check(answer, method: "INVITE", password: "s3cret", now: 1_000_001) == .rejected)
    }

    @Test func aStoredHA1ChecksLikeThePassword() {
        let challenge = Self.authenticator.challenge(algorithm: .md5, now: 50)
        let ha1 = SIPDigest.ha1(username: "trunk1", realm: "parley", password: "s3cret", algorithm: .md5)
        #expect(Self.authenticator.check(Self.answer(challenge, password: "s3cret"), method: "INVITE", ha1: ha1, now: 60) == .accepted)
    }
}
