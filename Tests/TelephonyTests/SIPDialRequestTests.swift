import SIP
import SessionEngine
@testable import Telephony
import Testing

/// `POST /v1/realtime/calls`'s SIP body and the trunks it names, as values.
@Suite struct SIPDialRequestTests {
    static func parse(_ text: String) throws(ProtocolError) -> SIPDialRequest { try SIPDialRequest.parse(Array(text.utf8)) }

    @Test func aNumberOrASIPURIThroughANamedTrunk() throws {
        let trunk = try #require(SIPOutboundTrunk(name: "acme", uri: "sip:+15557654321@198.51.100.1:5080"))
        #expect(trunk.host == "198.51.100.1" && trunk.port == 5080 && trunk.caller == "+15557654321")
        #expect(SIPOutboundTrunk(name: "bare", uri: "sip:198.51.100.1")?.caller == "parley" && SIPOutboundTrunk(name: "bare", uri: "sip:198.51.100.1")?.port == 5060)
        #expect(SIPOutboundTrunk(name: "", uri: "sip:198.51.100.1") == nil && SIPOutboundTrunk(name: "x", uri: "tel:+1555") == nil)

        let call = try Self.parse(#"{"transport":{"type":"sip","destination":"+15551234567","trunk":"acme","ring_timeout_seconds":12},"session":{"instructions":"Be brief."}}"#)
        guard case .realtime(let session) = call.session else { Issue.record("not a Realtime session"); return }
        #expect(call.destination == "+15551234567" && call.trunk == "acme" && call.ringSeconds == 12 && session?.instructions == "Be brief.")
        #expect(call.requestURI(at: trunk)?.description == "sip:+15551234567@198.51.100.1:5080")
        let uri = try Self.parse(#"{"transport":{"type":"sip","destination":"sip:bob@pbx.example.com","trunk":"acme"}}"#)
        #expect(uri.requestURI(at: trunk)?.description == "sip:bob@pbx.example.com" && uri.ringSeconds == SIPOutboundInvite.defaultRingSeconds && uri.session == .realtime(nil))
        #expect(uri.answeringMachine == AnsweringMachinePolicy(), "by default the session answers whoever speaks and goes on with a machine")
        let message = try Self.parse(#"{"transport":{"type":"sip","destination":"+15551234567","trunk":"acme","answering_machine":{"on_machine":"leave_message","message":"Call us back.","until_decided":"listen"}}}"#)
        #expect(message.answeringMachine == AnsweringMachinePolicy(onMachine: .leaveMessage, message: "Call us back.", untilDecided: .listen))
        // GPT-Live's: a Live configuration, required, its format the call's.
        let live = try SIPDialRequest.parse(Array(#"{"session":{"model":"gpt-live-1","instructions":"Be brief."},"transport":{"type":"sip","destination":"+15551234567","trunk":"acme"}}"#.utf8), live: true)
        guard case .live(let config) = live.session else { Issue.record("not a Live session"); return }
        #expect(config.model == "gpt-live-1" && config.format == .negotiated)
        #expect(throws: ProtocolError.self) { try SIPDialRequest.parse(Array(#"{"transport":{"type":"sip","destination":"+15551234567","trunk":"acme"}}"#.utf8), live: true) }
    }

    @Test func whatIsNotACallIsRefusedWithItsPath() {
        let cases: [(String, String, String?)] = [
            ("not json", "invalid_json", nil),
            (#"{"session":{}}"#, "missing_field", "transport"),
            (#"{"transport":{"type":"webrtc","destination":"+15551234567","trunk":"a"}}"#, "invalid_value", "transport.type"),
            (#"{"transport":{"type":"sip","destination":"5551234567","trunk":"a"}}"#, "invalid_value", "transport.destination"),
            (#"{"transport":{"type":"sip","destination":"+1555","trunk":"a"}}"#, "invalid_value", "transport.destination"),
            (#"{"transport":{"type":"sip","destination":"sip:bob@x>evil","trunk":"a"}}"#, "invalid_value", "transport.destination"),
            (#"{"transport":{"type":"sip","destination":"+15551234567"}}"#, "missing_field", "transport.trunk"),
            (#"{"transport":{"type":"sip","destination":"+15551234567","trunk":"a","ring_timeout_seconds":1}}"#, "invalid_value", "transport.ring_timeout_seconds"),
            (#"{"transport":{"type":"sip","destination":"+15551234567","trunk":"a","codec":"g729"}}"#, "unknown_parameter", "transport.codec"),
            (#"{"transport":{"type":"sip","destination":"+15551234567","trunk":"a"},"model":"x"}"#, "unknown_parameter", "model"),
            (#"{"transport":{"type":"sip","destination":"+15551234567","trunk":"a","answering_machine":{"on_machine":"leave_message"}}}"#, "invalid_value",
             "transport.answering_machine.message"),
            (#"{"transport":{"type":"sip","destination":"+15551234567","trunk":"a","answering_machine":{"on_machine":"hang_up","message":"hi"}}}"#, "invalid_value",
             "transport.answering_machine.message"),
            (#"{"transport":{"type":"sip","destination":"+15551234567","trunk":"a","answering_machine":{"on_machine":"voicemail"}}}"#, "invalid_value",
             "transport.answering_machine.on_machine"),
            (#"{"transport":{"type":"sip","destination":"+15551234567","trunk":"a","answering_machine":{"wait":true}}}"#, "unknown_parameter",
             "transport.answering_machine.wait"),
        ]
        for (text, code, param) in cases {
            do throws(ProtocolError) {
                _ = try Self.parse(text)
                Issue.record("taken: \(text)")
            } catch {
                #expect(error.code.rawValue == code && error.param == param, "\(text): \(error)")
            }
        }
    }
}
