import JSON
import SIP
import Session
import SessionEngine

/// A JSON body that places a phone call (the shape OpenAI gives GPT-Live's outbound SIP: a
/// transport naming the destination and the trunk): `{"transport": {"type": "sip", "destination":
/// "+15551234567" | "sip:…", "trunk": "name"}, "session": {…}}`. On `POST /v1/realtime/calls` the
/// session is optional, as `session.update` gives it; on `POST /v1/live/sessions` it is required,
/// a Live session's configuration (strict, no `audio.format`: the call's G.711 is negotiated).
/// Parsed strictly: a field it does not define is refused, as GPT-Live's are.
struct SIPDialRequest: Equatable {
    /// The session the answered call opens.
    /// The API the call speaks once answered.
    typealias Session = CallAPI

    /// The number (E.164, `+` and 7 to 15 digits) or SIP URI dialled.
    var destination: String
    var trunk: String
    var session = Session.realtime(nil)
    /// How long it rings before Parley cancels it (`transport.ring_timeout_seconds`, 5 to 120).
    var ringSeconds = SIPOutboundInvite.defaultRingSeconds
    /// What the session does about a machine, and until it knows (`transport.answering_machine`).
    var answeringMachine = AnsweringMachinePolicy()

    /// `live`: the body of `POST /v1/live/sessions`.
    static func parse(_ body: [UInt8], live: Bool = false) throws(ProtocolError) -> SIPDialRequest {
        guard let json = try? JSON(parsing: String(decoding: body, as: UTF8.self)), json.object != nil else {
            throw ProtocolError(.invalidJSON, "the body must be a JSON object with 'transport' and 'session'")
        }
        let fields = EventFields(json)
        try fields.refuseUnknown(["transport", "session"])
        guard let transport = try fields.object("transport") else { throw fields.missing("transport") }
        try transport.refuseUnknown(["type", "destination", "trunk", "ring_timeout_seconds", "answering_machine"])
        guard try transport.requiredString("type") == "sip" else { throw transport.invalid("type", "must be 'sip' for a phone call (a WebRTC call posts its SDP offer)") }
        let destination = try transport.requiredString("destination")
        guard isNumber(destination) || isSIPURI(destination) else {
            throw transport.invalid("destination", "must be an E.164 number (+ and 7 to 15 digits) or a sip: URI")
        }
        var request = SIPDialRequest(destination: destination, trunk: try transport.requiredString("trunk"))
        if let seconds = try transport.integer("ring_timeout_seconds", in: 5...120) { request.ringSeconds = seconds }
        if let policy = try transport.object("answering_machine") { request.answeringMachine = try Self.policy(policy) }
        let session = try fields.object("session")
        if live {
            guard let session else { throw fields.missing("session") }
            request.session = .live(try LiveSessionConfig.parse(session, media: true))
        } else if let session {
            request.session = .realtime(try SessionUpdate.parse(session))
        }
        return request
    }

    /// `{"on_machine": "continue" | "hang_up" | "leave_message", "message": "…", "until_decided":
    /// "respond" | "listen"}`; a message is required with `leave_message` and taken with it only.
    static func policy(_ fields: EventFields) throws(ProtocolError) -> AnsweringMachinePolicy {
        try fields.refuseUnknown(["on_machine", "message", "until_decided"])
        var policy = AnsweringMachinePolicy()
        if let choice = try fields.choice("on_machine", AnsweringMachinePolicy.OnMachine.allCases.map(\.rawValue)) {
            policy.onMachine = AnsweringMachinePolicy.OnMachine(rawValue: choice) ?? .continue
        }
        if let choice = try fields.choice("until_decided", AnsweringMachinePolicy.UntilDecided.allCases.map(\.rawValue)) {
            policy.untilDecided = AnsweringMachinePolicy.UntilDecided(rawValue: choice) ?? .respond
        }
        policy.message = try fields.string("message")
        if policy.onMachine == .leaveMessage {
            guard let message = policy.message, !message.isEmpty, message.utf8.count <= 4_096 else {
                throw fields.invalid("message", "leave_message needs the message to leave (1 to 4,096 bytes of text)")
            }
        } else if policy.message != nil {
            throw fields.invalid("message", "a message is left only with on_machine 'leave_message'")
        }
        return policy
    }

    static func isNumber(_ text: String) -> Bool {
        let digits = text.utf8.dropFirst()
        return text.hasPrefix("+") && (7...15).contains(digits.count) && digits.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
    }

    static func isSIPURI(_ text: String) -> Bool {
        text.utf8.count <= 256 && (text.hasPrefix("sip:") || text.hasPrefix("sips:")) && SIPURI(text) != nil
            && !text.utf8.contains { $0 < 0x21 || $0 == 0x7F || $0 == UInt8(ascii: "<") || $0 == UInt8(ascii: ">") }
    }

    /// The INVITE's Request-URI at `trunk`: a number as its user at the trunk's address, a SIP
    /// URI as given (it is still sent to the trunk).
    func requestURI(at trunk: SIPOutboundTrunk) -> SIPURI? {
        if Self.isNumber(destination) { return SIPURI("sip:\(destination)@\(trunk.host):\(trunk.port)") }
        return SIPURI(destination)
    }
}
