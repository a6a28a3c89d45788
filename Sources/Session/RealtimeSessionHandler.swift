import Server
import Loop

/// A Realtime API session on `/v1/realtime` or `/ws`: client frames into the session's engine
/// (JSON events, pcm16 or G.711 appends, Opus packets as binary frames on `/ws`), and the engine's
/// events out as the Realtime API's JSON in the client's dialect.
final class RealtimeSessionHandler: WebSocketHandler, SessionWire {
    private let dialect: Dialect
    private var driver: SessionDriver!
    let endpointName: String

    init(endpoint: RealtimeEndpoint, request: HTTPRequest, admitted: Admitted, allowsOpus: Bool) {
        endpointName = allowsOpus ? "/ws" : "/v1/realtime"
        // Browsers cannot send the OpenAI-Beta header; they offer the subprotocol instead.
        let betaByProtocol = request.tokens("sec-websocket-protocol").contains("openai-beta.realtime-v1")
        dialect = betaByProtocol ? .beta : Dialect(openAIBetaHeader: request.header("openai-beta"))
        var options = SessionEngine.Options(model: (request.queryValue("model") ?? request.queryValue("deployment")).map(String.init) ?? endpoint.modelName, allowsOpus: allowsOpus,
                                            transcribes: endpoint.speech.transcriber != nil,
                                            synthesizes: endpoint.speech.synthesizer != nil && endpoint.speech.pool != nil)
        options.configuration = SessionConfiguration()
        options.transcriptionModel = endpoint.speech.transcriber?.name
        // /ws is for browsers and the CLI, which send Opus packets: that is its default input.
        if allowsOpus { options.configuration.inputAudioFormat = .opus }
        // ... and whose page plays Opus back: with a synthesiser, /ws replies are spoken.
        if allowsOpus && options.synthesizes {
            options.configuration.outputModalities = .audio
            options.configuration.outputAudioFormat = .opus
        }
        // A session opened with a client secret starts with the settings the secret pins, and
        // keeps them; it may last as long as the secret says.
        if let secret = admitted.caller.secret {
            let session = EventFields(secret.session, path: "session")
            if let update = try? SessionUpdate.parse(session) {
                try? options.configuration.apply(update, allowsOpus: allowsOpus)
                options.pinned = SessionEngine.Pinned(update)
            }
            if let model = try? session.string("model") { options.model = model; options.pinned.insert(.model) }
        }
        driver = SessionDriver(endpoint: endpoint, admitted: admitted, options: options, wire: self)
    }

    func webSocketDidOpen(_ socket: WebSocket) { driver.open(socket) }

    func webSocket(_ socket: WebSocket, didReceive message: UnsafeRawBufferPointer, kind: WebSocketMessageKind) {
        guard driver.admitEvent() else { return }
        let engine = driver.engine
        switch kind {
        case .text:
            let text = String(decoding: message, as: UTF8.self)
            do {
                switch try ClientMessage.parse(text) {
                case .audioAppend(let eventID, let bytes):
                    if let refusal = engine.configuration.refusal(of: .append(bytes: bytes.count), allowsOpus: engine.allowsOpus) {
                        return driver.refuse(refusal, eventID: eventID)
                    }
                    let format = engine.configuration.inputAudioFormat
                    driver.feedAudio { try $0.appended(bytes, as: format) }
                case .event(let event):
                    driver.handle(.client(event))
                }
            } catch {
                driver.handle(.invalidClientEvent(error))
            }
        case .binary:
            if let refusal = engine.configuration.refusal(of: .binaryFrame, allowsOpus: engine.allowsOpus) {
                return driver.refuse(refusal)
            }
            driver.feedAudio { try $0.opus(message) }
        }
    }

    func webSocketDidClose(_ socket: WebSocket, code: WebSocketCloseCode) { driver.close(code: code) }

    // MARK: SessionWire

    func send(_ event: ServerEvent, on socket: WebSocket) {
        guard event.isSent(in: dialect) else { return }
        socket.send(text: event.json(dialect: dialect))
    }

    func sendAudio(_ piece: SpeechOutput.Piece, at: ContentLocation, on socket: WebSocket) {
        switch piece {
        case .opus(let packet): socket.send(binary: packet)
        case .pcm(let base64): socket.send(text: driver.event(.outputAudioDelta(at, delta: base64)).json(dialect: dialect))
        }
    }
}
