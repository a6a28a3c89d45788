import Access
import JSON
import Server
import Session
import SessionEngine

/// GPT-Live's WebRTC sessions (openai SDK 3.54.0): `POST /v1/live/sessions` (`client.live.create`;
/// with a SIP transport instead, a phone call placed: `SIPEndpoint.dialOut`)
/// with `{"session": {…}, "transport": {"type": "webrtc", "sdp": "<offer>"}}`, and a stored
/// session's fork, `POST /v1/live/sessions/{id}/fork` (`client.live.sessions.fork`), whose
/// `session` is optional overrides of the stored one's. Both answer
/// `{"session": {"id"}, "transport": {"type": "webrtc", "sdp": "<answer>"}}`. The session is
/// admitted as a Live WebSocket's is and started as the call's data channel opens.
extension WebRTCEndpoint {
    func liveOffer(_ request: HTTPRequest, _ stream: HTTPResponseStream) {
        if LoopDrain.on(stream.loop).isDraining { return stream.respond(Self.cors(Self.draining, request)) }
        if case .failure(let refusal) = realtime.access.identify(request, offered: []) { return stream.respond(Self.cors(refusal.response, request)) }
        // A SIP transport places a phone call with the session on it (SIP's `dialOut`).
        if let json = try? JSON(parsing: String(decoding: request.body, as: UTF8.self)), json["transport"]?["type"]?.string == "sip" {
            guard let dialOut else {
                return stream.respond(Self.cors(.jsonError(.badRequest, code: "sip_disabled",
                                                           message: "this server places no phone calls: start it with --sip-port and --sip-trunk NAME=URI"), request))
            }
            return dialOut(request, stream)
        }
        switch Self.readLive(request, session: { session throws(ProtocolError) in
            guard let session else { throw ProtocolError(.missingField, "missing required field 'session'", param: "session") }
            return try LiveSessionConfig.parse(session, media: true)
        }) {
        case .failure(let refusal):
            metrics.offersRefused.add(1)
            stream.respond(Self.cors(refusal.response, request))
        case .success(let (config, offer)):
            startLive(config, offer, request, stream)
        }
    }

    /// `POST /v1/live/sessions/{id}/fork`: the stored session `id`, found for this caller, with the
    /// body's overrides, on a new WebRTC call.
    func liveFork(_ request: HTTPRequest, _ stream: HTTPResponseStream, id: String) {
        let caller: Caller
        switch realtime.access.identify(request, offered: []) {
        case .failure(let refusal): return stream.respond(Self.cors(refusal.response, request))
        case .success(let identified): caller = identified
        }
        LiveStoredSessions.find(id, for: caller, endpoint: realtime, on: stream.loop) { found in
            let read = found.flatMap { stored in
                Self.readLive(request, session: { overrides throws(ProtocolError) in try stored.fork(overrides, media: true) })
            }
            switch read {
            case .failure(let refusal):
                self.metrics.offersRefused.add(1)
                stream.respond(Self.cors(refusal.response, request))
            case .success(let (config, offer)):
                self.startLive(config, offer, request, stream)
            }
        }
    }

    private func startLive(_ config: LiveSessionConfig, _ offer: WebRTCOffer, _ request: HTTPRequest, _ stream: HTTPResponseStream) {
        let loop = stream.loop
        admit(request, on: loop, respondingOn: stream) { admitted in
            guard stream.isOpen else { return }  // the caller's place goes with `admitted`
            switch self.answer(offer, request, on: loop, converse: self.opening(.live(config), carrier: "webrtc", session: nil, request, admitted)) {
            case .success(let made):
                let body = JSON.object([("session", .object([("id", .string(made.sessionID))])),
                                        ("transport", .object([("type", .string("webrtc")), ("sdp", .string(String(decoding: made.sdp, as: UTF8.self)))]))])
                stream.respond(Self.cors(HTTPResponse(status: .ok, contentType: "application/json", body: body.description + "\n"), request))
            case .failure(let refusal):
                stream.respond(Self.cors(refusal.response, request))
            }
        }
    }

    /// The body's session (strict, as OpenAI reads it: `session` makes the configuration from the
    /// body's `session` object, nil when absent) and the offer in its transport.
    static func readLive(_ request: HTTPRequest, session: (EventFields?) throws(ProtocolError) -> LiveSessionConfig)
        -> Result<(LiveSessionConfig, WebRTCOffer), HTTPRefusal> {
        guard let json = try? JSON(parsing: String(decoding: request.body, as: UTF8.self)), json.object != nil else {
            return .failure(HTTPRefusal(.jsonError(.badRequest, code: "invalid_json", message: "the body must be a JSON object with 'session' and 'transport'")))
        }
        let body = EventFields(json)
        let config: LiveSessionConfig
        let sdp: String
        do throws(ProtocolError) {
            try body.refuseUnknown(["session", "transport"])
            guard let transport = try body.object("transport") else { throw body.missing("transport") }
            try transport.refuseUnknown(["type", "sdp"])
            guard try transport.requiredString("type") == "webrtc" else { throw transport.invalid("type", "must be 'webrtc'") }
            sdp = try transport.requiredString("sdp")
            config = try session(try body.object("session"))
        } catch {
            return .failure(HTTPRefusal(.jsonError(.badRequest, code: error.code.rawValue, message: error.message)))
        }
        return offer(sdp: Array(sdp.utf8)).map { (config, $0) }
    }
}
