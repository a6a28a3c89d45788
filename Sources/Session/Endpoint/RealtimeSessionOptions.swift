import Access
import JSON
import Server
import Store
import SessionEngine

extension SessionEngine.Options {
    /// A Realtime session's settings as it opens: the endpoint's defaults (Opus in and out on
    /// `/ws`), then what the client secret it was opened with pins, then, for a session restored
    /// from the store, the settings it had, under its own id.
    package init(realtime request: HTTPRequest, endpoint: RealtimeEndpoint, caller: Caller, allowsOpus: Bool, restoring stored: StoredConversation?) {
        let model = (request.queryValue("model") ?? request.queryValue("deployment")).map(String.init) ?? endpoint.modelName
        self.init(model: model, allowsOpus: allowsOpus, maxHistoryTextBytes: endpoint.limits.maxHistoryBytes, transcribes: endpoint.speech.transcriber != nil,
                  synthesizes: endpoint.speech.synthesizer != nil && endpoint.speech.pool != nil)
        configuration = SessionConfiguration()
        hear(with: endpoint)
        speculatesByDefault = endpoint.speculativeRepliesByDefault
        records = endpoint.recordings != nil
        tooling = endpoint.tooling
        // /ws is for browsers and the CLI, which send Opus packets: that is its default input.
        if allowsOpus { configuration.inputAudioFormat = .opus }
        // ... and whose page plays Opus back: with a synthesiser, /ws replies are spoken.
        if allowsOpus && synthesizes {
            configuration.outputModalities = .audio
            configuration.outputAudioFormat = .opus
        }
        // `?intent=transcription` opens a transcription session, as the Realtime API's URL does.
        if request.queryValue("intent") == "transcription" { configuration.type = .transcription }
        // A session opened with a client secret starts with the settings the secret pins, and
        // keeps them; it may last as long as the secret says.
        if let secret = caller.secret {
            let session = EventFields(secret.session, path: "session")
            if let update = try? SessionUpdate.parse(session) {
                // The secret's `type` makes the session what it is; it is not a switch.
                if let type = update.sessionType { configuration.type = type }
                try? configuration.apply(update, allowsOpus: allowsOpus)
                pinned = SessionEngine.Pinned(update)
            }
            if let model = try? session.string("model") { self.model = model; pinned.insert(.model) }
        }
        if let stored {
            if let json = try? JSON(parsing: stored.session.settings), let update = try? SessionUpdate.parse(EventFields(json, path: "session")) {
                if let type = update.sessionType { configuration.type = type }
                try? configuration.apply(update, allowsOpus: allowsOpus)
            }
            // The store keeps settings as session.updated shows them, MCP secrets redacted: the
            // servers are not restored (the client names them again), rather than called with
            // "[redacted]" for a token.
            configuration.mcpServers = []
            sessionID = stored.session.sessionID
        }
    }

    /// A WebRTC call's session: Opus in and out on the media track whatever `session.update` names
    /// (`SessionConfiguration.audioFormatsFixed`), spoken replies when a voice is there, none of
    /// `/ws`'s defaults otherwise; then the settings the call's offer came with (the multipart
    /// `session` part), applied as a `session.update` would be, without pinning them.
    package mutating func carryAudioOnACall(session: JSON?) {
        configuration.inputAudioFormat = .opus
        configuration.outputAudioFormat = .opus
        if synthesizes { configuration.outputModalities = .audio }
        configuration.audioFormatsFixed = true
        guard let session, let update = try? SessionUpdate.parse(EventFields(session, path: "session")) else { return }
        try? configuration.apply(update, allowsOpus: true)
        if let model = try? EventFields(session, path: "session").string("model") { self.model = model }
    }
}

extension SessionEngine.Options {
    /// What the endpoint's speech services give every session it opens, a call's or a client's:
    /// the recogniser and what it answers a quiet with, the VAD, the end-of-turn model.
    private mutating func hear(with endpoint: RealtimeEndpoint) {
        if let transcriber = endpoint.speech.transcriber {
            transcriptionModel = { @Sendable choice in transcriber.model(for: choice) }
        }
        voiceActivityModel = endpoint.speech.voiceActivity
        // A session on a loop: its VAD windows are scored with the loop's others (`VoiceActivityPass`).
        batchesVoiceActivity = true
        judgesTurns = endpoint.speech.endOfTurn != nil
        readsTurnWords = endpoint.readsTurnWords && endpoint.speech.transcriber?.settledWords == .decode
        turnTuning = endpoint.turnTuning
        settledWords = endpoint.speech.transcriber?.settledWords ?? .decode
    }

    /// A phone call's session (`/twilio`, SIP): the endpoint's model and speech, replies after
    /// tools without a client to ask for them, the audio in `format` and fixed (the call's leg
    /// fixes it), spoken replies when a voice is there, and `sessions` (the operator's call
    /// settings, a number's, an application's) applied in order over the defaults.
    package init(phoneCall endpoint: RealtimeEndpoint, format: RealtimeAudioFormat, sessions: [SessionUpdate?]) {
        self.init(model: endpoint.modelName, transcribes: endpoint.speech.transcriber != nil,
                  synthesizes: endpoint.speech.synthesizer != nil && endpoint.speech.pool != nil)
        hear(with: endpoint)
        // A phone call has no client to ask for the reply after a tool: the server does.
        tooling = endpoint.tooling.continuing(true)
        var configuration = SessionConfiguration()
        for given in sessions {
            if let given { try? configuration.apply(given, allowsOpus: false) }
        }
        configuration.inputAudioFormat = format
        configuration.outputAudioFormat = format
        configuration.audioFormatsFixed = true
        configuration.outputModalities = synthesizes ? .audio : .text
        self.configuration = configuration
    }
}
