import JSON
import SIP
@testable import Telephony
import Testing

/// The body of `realtime.call.incoming`: the INVITE's headers as OpenAI's event gives them.
@Suite struct SIPWebhookTests {
    static let invite = "INVITE sip:agent@127.0.0.1:5060 SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:5070;branch=z9hG4bK1\r\n"
        + "From: <sip:trunk1@127.0.0.1>;tag=1\r\nTo: <sip:agent@127.0.0.1>\r\nCall-ID: c1\r\nCSeq: 2 INVITE\r\n"
        + "Authorization: Digest username=\"trunk1\", realm=\"parley\", nonce=\"n\", uri=\"sip:agent@127.0.0.1:5060\", response=\"r\"\r\n"
        + "Proxy-Authorization: Digest username=\"trunk1\", realm=\"edge\", nonce=\"m\", uri=\"sip:agent@127.0.0.1:5060\", response=\"q\"\r\n"
        + "X-Customer: 42\r\nContent-Length: 0\r\n\r\n"

    @Test func theInvitesCredentialsAreWithheldAndTheRestKept() throws {
        let message = try SIPMessageParser.parse(datagram: Array(Self.invite.utf8))
        let body = try JSON(parsing: SIPWebhook.body(id: "evt_1", callID: "rtc_1", invite: message, at: 1_764_108_000))
        let names = body["data"]?["sip_headers"]?.array?.compactMap { $0["name"]?.string } ?? []
        #expect(names == ["Via", "From", "To", "Call-ID", "CSeq", "X-Customer"])
        #expect(body["data"]?["call_id"]?.string == "rtc_1")
    }
}
