import Testing
@testable import SIP

/// Responses built from requests (RFC 3261 section 8.2.6) and the transport's Via stamping
/// (section 18.2.1, RFC 3581).
@Suite struct SIPResponseBuilderTests {
    static let invite = sip(
        "INVITE sip:bob@192.0.2.4 SIP/2.0",
        "Via: SIP/2.0/UDP pc33.example.com;rport;branch=z9hG4bKnashds8",
        "Via: SIP/2.0/UDP proxy.example.com:5070;branch=z9hG4bK77ef4c2312983.1",
        "Max-Forwards: 70", "To: Bob <sip:bob@example.com>", "From: Alice <sip:alice@example.com>;tag=1928301774",
        "Call-ID: a84b4c76e66710@pc33.example.com", "CSeq: 314159 INVITE", "Contact: <sip:alice@pc33.example.com>",
        "Timestamp: 54", "Content-Length: 0", "")

    @Test func aFinalResponseCopiesTheRequestsFieldsAndAddsOurTag() throws {
        let request = try SIPMessage(datagram: Self.invite)
        let response = SIPMessage.response(to: request, status: 486, toTag: "a6c85cf")
        #expect(response.startLine == .response(status: 486, reason: "Busy Here"))
        #expect(response.values("Via") == request.values("Via"))
        #expect(response.value("From") == request.value("From"))
        #expect(response.value("Call-ID") == request.value("Call-ID") && response.value("CSeq") == request.value("CSeq"))
        #expect(try response.to().tag == "a6c85cf" && response.to().displayName == "Bob")
        #expect(response.value("Contact") == nil)
        #expect(try SIPMessage(datagram: response.encoded()) == response)
    }

    @Test func aTryingGetsNoTagAndAnExistingTagIsKept() throws {
        let request = try SIPMessage(datagram: Self.invite)
        #expect(try SIPMessage.response(to: request, status: 100, toTag: "x").to().tag == nil)
        let tagged = SIPMessage.response(to: SIPMessage.response(to: request, status: 180, toTag: "first"), status: 200, toTag: "second")
        #expect(try tagged.to().tag == "first")
    }

    @Test func rportGetsTheSourcePortAndReceivedTheSourceAddress() throws {
        let request = try SIPMessage(datagram: Self.invite)
        let response = SIPMessage.response(to: request, status: 200, toTag: "t", source: (host: "198.51.100.7", port: 31337))
        let top = try response.topVia()
        #expect(top.received == "198.51.100.7")
        #expect(top.rport == .some(31337))
        #expect(try response.vias()[1] == request.vias()[1])
    }

    @Test func receivedIsAddedOnlyWhenTheSentByHostDiffers() throws {
        let request = try SIPMessage(datagram: sip(
            "OPTIONS sip:a@h SIP/2.0", "Via: SIP/2.0/UDP 192.0.2.9:5060;branch=z9hG4bKq", "From: <sip:b@h>;tag=1",
            "To: <sip:a@h>", "Call-ID: c", "CSeq: 1 OPTIONS", ""))
        #expect(try request.stampingSource(host: "192.0.2.9", port: 5060).topVia().received == nil)
        let moved = try request.stampingSource(host: "203.0.113.1", port: 5060).topVia()
        #expect(moved.received == "203.0.113.1" && moved.rport == nil)
    }
}
