import Session
import JSON
import Metrics
import Loop

/// A message Twilio sends on a Media Streams WebSocket, decoded and checked
/// (https://www.twilio.com/docs/voice/media-streams/websocket-messages). Pure: text in, a value or
/// a `TwilioMessageError` out, so every malformed shape is a unit test.
enum TwilioMessage: Equatable {
    /// The first message: which protocol the stream speaks.
    case connected(protocol: String?)
    case start(TwilioStart)
    /// 20 ms of G.711 µ-law at 8 kHz, base64 in `media.payload`, decoded here.
    case media(track: String?, payload: [UInt8])
    /// A mark the server sent has played (or was cleared): its name comes back.
    case mark(name: String)
    /// The caller pressed a key.
    case dtmf(digit: Character)
    /// The call ended, or the stream was stopped.
    case stop

    /// The longest media payload taken: a second of audio. Twilio sends 160 bytes (20 ms).
    static let maxPayloadBytes = 8_000

    static func parse(_ text: String) throws(TwilioMessageError) -> TwilioMessage {
        guard let json = try? JSON(parsing: text), json.object != nil else { throw .notJSON }
        guard let event = json["event"]?.string else { throw .missing("event") }
        switch event {
        case "connected":
            return .connected(protocol: json["protocol"]?.string)
        case "start":
            guard let start = json["start"], start.object != nil else { throw .missing("start") }
            guard let streamSid = start["streamSid"]?.string ?? json["streamSid"]?.string else { throw .missing("start.streamSid") }
            let format = start["mediaFormat"]
            // customParameters: the <Parameter> elements of the TwiML, name to string value.
            let parameters = start["customParameters"]?.object?.compactMap { name, value in value.string.map { (name, $0) } } ?? []
            return .start(TwilioStart(streamSid: streamSid, callSid: start["callSid"]?.string, accountSid: start["accountSid"]?.string,
                                      tracks: start["tracks"]?.array?.compactMap(\.string) ?? ["inbound"],
                                      encoding: format?["encoding"]?.string ?? "audio/x-mulaw", sampleRate: format?["sampleRate"]?.int ?? 8000,
                                      channels: format?["channels"]?.int ?? 1, customParameters: parameters))
        case "media":
            guard let media = json["media"], let payload = media["payload"]?.string else { throw .missing("media.payload") }
            guard payload.utf8.count <= (maxPayloadBytes + 2) / 3 * 4 else { throw .payloadSize(payload.utf8.count / 4 * 3) }
            guard let bytes = Base64.decode(payload.utf8) else { throw .invalidBase64 }
            guard !bytes.isEmpty else { throw .payloadSize(0) }
            return .media(track: media["track"]?.string, payload: bytes)
        case "mark":
            guard let name = json["mark"]?["name"]?.string else { throw .missing("mark.name") }
            return .mark(name: name)
        case "dtmf":
            guard let digit = json["dtmf"]?["digit"]?.string, digit.count == 1, let character = digit.first,
                  "0123456789*#ABCD".contains(character) else { throw .missing("dtmf.digit") }
            return .dtmf(digit: character)
        case "stop":
            return .stop
        default:
            throw .unknownEvent(String(event.prefix(32)))
        }
    }
}

/// What `start` says about the call: the stream's id (which every message the server sends
/// names), the call's, the tracks streamed, the audio format, and the TwiML's parameters.
struct TwilioStart: Equatable {
    let streamSid: String
    let callSid: String?
    let accountSid: String?
    let tracks: [String]
    let encoding: String
    let sampleRate: Int
    let channels: Int
    let customParameters: [(String, String)]

    static func == (a: TwilioStart, b: TwilioStart) -> Bool {
        a.streamSid == b.streamSid && a.callSid == b.callSid && a.accountSid == b.accountSid && a.tracks == b.tracks && a.encoding == b.encoding
            && a.sampleRate == b.sampleRate && a.channels == b.channels && a.customParameters.elementsEqual(b.customParameters) { $0 == $1 }
    }

    func parameter(_ name: String) -> String? { customParameters.first { $0.0 == name }?.1 }
}

/// Why a message from Twilio was ignored, as `parley_twilio_messages_rejected_total{reason}`
/// counts it: a malformed message (`TwilioMessageError.reason`), or one that came out of turn.
enum TwilioRejection: String, CaseIterable, MetricLabel {
    static let labelName = "reason"
    case notJSON = "not_json"
    case missingField = "missing_field"
    case invalidBase64 = "invalid_base64"
    case payloadSize = "payload_size"
    case unknownEvent = "unknown_event"
    case mediaBeforeStart = "media_before_start"
    case binaryFrame = "binary_frame"
}

/// Why a message was not taken; `reason` counts it in `parley_twilio_messages_rejected_total`.
enum TwilioMessageError: Error, Equatable {
    case notJSON
    case missing(String)
    case invalidBase64
    case payloadSize(Int)
    case unknownEvent(String)

    var reason: TwilioRejection {
        switch self {
        case .notJSON: .notJSON
        case .missing: .missingField
        case .invalidBase64: .invalidBase64
        case .payloadSize: .payloadSize
        case .unknownEvent: .unknownEvent
        }
    }

    var message: String {
        switch self {
        case .notJSON: "not a JSON object"
        case .missing(let field): "no \(field)"
        case .invalidBase64: "media.payload is not base64"
        case .payloadSize(let bytes): "a media payload of \(bytes) bytes (1 to \(TwilioMessage.maxPayloadBytes) taken)"
        case .unknownEvent(let event): "unknown event \(event)"
        }
    }
}

/// What the server sends Twilio: audio to play, a mark after it, or `clear` to drop what is queued.
enum TwilioOutbound {
    /// `payload`: base64 G.711 µ-law, already safe inside a JSON string.
    /// Twilio's media message: the µ-law bytes in base64, as its Media Streams protocol carries them.
    static func media(streamSid: String, audio: [UInt8]) -> String {
        #"{"event":"media","streamSid":"# + JSON.quoted(streamSid) + #","media":{"payload":""# + Base64.encode(audio) + #""}}"#
    }

    static func mark(streamSid: String, name: String) -> String {
        #"{"event":"mark","streamSid":"# + JSON.quoted(streamSid) + #","mark":{"name":"# + JSON.quoted(name) + "}}"
    }

    static func clear(streamSid: String) -> String {
        #"{"event":"clear","streamSid":"# + JSON.quoted(streamSid) + "}"
    }
}
