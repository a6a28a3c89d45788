import JSON
import Server
import Session
import SessionEngine

/// `POST /v1/live/sessions` (GPT-Live's WebRTC sessions, openai SDK 3.54.0 `client.live.create`):
/// `{"session": {…}, "transport": {"type": "webrtc", "sdp": "<offer>"}}` in, and
/// `{"session": {"id"}, "transport": {"type": "webrtc", "sdp": "<answer>"}}` out. The session is
/// admitted as a Live WebSocket's is and started as the call's data channel opens.
extension WebRTCEndpoint {
    func liveOffer(_ request: HTTPRequest, _ stream: HTTPResponseStream) {
        let loop = stream.loop
        if case .failure(let refusal) = realtime.access.identify(request, offered: []) { return stream.respond(Self.cors(refusal.response, request)) }
        let config: LiveSessionConfig
        let offer: WebRTCOffer
        switch Self.readLive(request) {
        case .failure(let refusal):
            metrics.offersRefused.add(1)
            return stream.respond(Self.cors(refusal.response, request))
        case .success(let read): (config, offer) = read
        }
        realtime.admitCall(request, on: loop, make: { LiveWebRTCSession(endpoint: realtime, request: request, admitted: $0, config: config) }) { admitted in
            switch admitted {
            case .failure(let refusal):
                stream.respond(Self.cors(refusal.response, request))
            case .success(let session):
                guard stream.isOpen else { return session.ended(.wentAway) }
                switch self.answer(offer, session, request, on: loop) {
                case .success(let made):
                    let body = JSON.object([("session", .object([("id", .string(session.sessionID))])),
                                            ("transport", .object([("type", .string("webrtc")), ("sdp", .string(String(decoding: made.sdp, as: UTF8.self)))]))])
                    stream.respond(Self.cors(HTTPResponse(status: .ok, contentType: "application/json", body: body.description + "\n"), request))
                case .failure(let refusal):
                    stream.respond(Self.cors(refusal.response, request))
                }
            }
        }
    }

    /// The body's session (strict, as OpenAI reads it) and the offer in its transport.
    static func readLive(_ request: HTTPRequest) -> Result<(LiveSessionConfig, WebRTCOffer), HTTPRefusal> {
        guard let json = try? JSON(parsing: String(decoding: request.body, as: UTF8.self)), json.object != nil else {
            return .failure(HTTPRefusal(.jsonError(.badRequest, code: "invalid_json", message: "the body must be a JSON object with 'session' and 'transport'")))
        }
        let body = EventFields(json)
        let config: LiveSessionConfig
        let sdp: String
        do throws(ProtocolError) {
            try body.refuseUnknown(["session", "transport"])
            guard let session = try body.object("session") else { throw body.missing("session") }
            guard let transport = try body.object("transport") else { throw body.missing("transport") }
            try transport.refuseUnknown(["type", "sdp"])
            guard try transport.requiredString("type") == "webrtc" else { throw transport.invalid("type", "must be 'webrtc'") }
            sdp = try transport.requiredString("sdp")
            config = try LiveSessionConfig.parse(session, media: true)
        } catch {
            return .failure(HTTPRefusal(.jsonError(.badRequest, code: error.code.rawValue, message: error.message)))
        }
        return offer(sdp: Array(sdp.utf8)).map { (config, $0) }
    }
}
