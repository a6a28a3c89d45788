@testable import Telephony
import Testing

/// Trunks to call out through, as the command line and the trunks file give them, and their
/// limits (`SIPTrunkLimiter`) on a clock the test drives.
@Suite struct SIPOutboundTrunkTests {
    @Test func theTrunksFileGivesTransportCredentialsRegistrationAndLimits() throws {
        let trunks = try SIPOutboundTrunk.parse(file: """
            {"acme": {"uri": "sip:+15557654321@198.51.100.1;transport=tls", "username": "parley", "password": "s3cret", "register_seconds": 600,
                      "max_calls": 20, "calls_per_second": 2.5},
             "lab": {"uri": "sip:10.0.0.2:5070;transport=tcp"}}
            """)
        let acme = try #require(trunks["acme"])
        #expect(acme.transport == .tls && acme.port == 5061 && acme.caller == "+15557654321", "TLS's port is 5061 (RFC 3261 section 19.1.2)")
        #expect(acme.credentials?.username == "parley" && acme.registerSeconds == 600 && acme.maxCalls == 20 && acme.callsPerSecond == 2.5)
        let lab = try #require(trunks["lab"])
        #expect(lab.transport == .tcp && lab.port == 5070 && lab.caller == "parley" && lab.credentials == nil && lab.maxCalls == nil)
        #expect(SIPOutboundTrunk(name: "x", uri: "sip:10.0.0.2;transport=sctp") == nil)
        // A name is resolved once (here by a resolver of the test's): the address is where calls go,
        // the name stays the Request-URI's host and what a TLS certificate is checked for.
        let named = try #require(SIPOutboundTrunk(name: "x", uri: "sip:+15557654321@sip.trunk.example;transport=tls") { host, port in
            host == "sip.trunk.example" ? SIPOutboundTrunk.numeric("198.51.100.7", port) : nil
        })
        #expect(named.host == "sip.trunk.example" && named.address.description == "198.51.100.7:5061")
        #expect(SIPOutboundTrunk(name: "x", uri: "sip:nowhere.example") { _, _ in nil } == nil, "a host that does not resolve")
    }

    @Test func aTrunksFileThatIsWrongSaysWhereAndNeverThePassword() {
        let cases: [(String, String)] = [
            ("[]", "is not a JSON object"),
            (#"{"a": {"uri": "tel:+1555"}}"#, "trunk 'a': needs 'uri'"),
            (#"{"a": {"uri": "sip:10.0.0.1", "password": "hunter2"}}"#, "'username' and 'password' go together"),
            (#"{"a": {"uri": "sip:10.0.0.1", "register_seconds": 5}}"#, "'register_seconds' must be 60 to 86,400"),
            (#"{"a": {"uri": "sip:10.0.0.1", "max_calls": 0}}"#, "'max_calls'"),
            (#"{"a": {"uri": "sip:10.0.0.1", "calls_per_second": -1}}"#, "'calls_per_second'"),
            (#"{"a": {"uri": "sip:10.0.0.1", "codec": "g729", "password": "hunter2"}}"#, "has 'codec'"),
            (#"{"a": {"uri": "sip:10.0.0.1", "srtp": true}}"#, "true only over TLS"),
            (#"{"a": {"uri": "sip:10.0.0.1", "ca_file": "/etc/ca.pem"}}"#, "for a trunk over TLS"),
        ]
        for (text, wanted) in cases {
            do {
                _ = try SIPOutboundTrunk.parse(file: text, resolve: SIPOutboundTrunk.numeric)
                Issue.record("\(text) was taken")
            } catch {
                #expect(error.description.contains(wanted) && !error.description.contains("hunter2"), "\(text): \(error)")
            }
        }
    }

    @Test func aTrunkCarriesItsMostCallsAtOnceAndItsCallsASecond() throws {
        let second: UInt64 = 1_000_000_000
        var limiter = SIPTrunkLimiter(maxCalls: 3, callsPerSecond: 2)
        try limiter.admit(now: 0)
        try limiter.admit(now: 0)
        #expect(throws: SIPTrunkLimiter.Refusal.rate(perSecond: 2, retryAfterSeconds: 1)) { try limiter.admit(now: second / 10) }
        try limiter.admit(now: second / 2)  // half a second: one more token
        #expect(throws: SIPTrunkLimiter.Refusal.busy(max: 3)) { try limiter.admit(now: 5 * second) }
        limiter.release()
        try limiter.admit(now: 5 * second)
        #expect(limiter.open == 3)

        var slow = SIPTrunkLimiter(maxCalls: nil, callsPerSecond: 0.2)
        try slow.admit(now: 0)
        #expect(throws: SIPTrunkLimiter.Refusal.rate(perSecond: 0.2, retryAfterSeconds: 5)) { try slow.admit(now: 0) }
        try slow.admit(now: 5 * second)

        var free = SIPTrunkLimiter(maxCalls: nil, callsPerSecond: nil)
        for _ in 0..<1_000 { try free.admit(now: 0) }
    }

    @Test func aPlaceIsGivenBackWhenTheCallGoes() throws {
        let trunk = try #require(SIPOutboundTrunk(name: "acme", uri: "sip:198.51.100.1"))
        var limited = trunk
        limited.maxCalls = 1
        let limits = SIPTrunkLimits(["acme": limited])
        var place: SIPTrunkPlace? = try limits.admit("acme", now: 0)
        #expect(throws: SIPTrunkLimiter.Refusal.busy(max: 1)) { _ = try limits.admit("acme", now: 0) }
        #expect(limits.open()["acme"] == 1 && place?.trunk == "acme")
        place = nil
        #expect(limits.open()["acme"] == 0)
        _ = try limits.admit("acme", now: 0)
    }
}
