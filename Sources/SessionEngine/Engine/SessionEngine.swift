import JSON
import Models
import SpeechContracts

/// One agent session's protocol logic, as a pure state machine: client events, audio and model
/// output in; events to send and model calls to start or stop out. It knows nothing of sockets,
/// threads or clocks, so every turn of a conversation is a plain unit test.
///
/// A value type, as the framers are: the caller owns it (inside a connection's state) and calls it
/// from one thread. An idle engine allocates nothing: history, audio and the response in flight
/// are empty until used, and the audio is released at every commit.
///
/// A turn with server VAD: audio → `input_audio_buffer.speech_started` → (silence) →
/// `speech_stopped` → `committed` → `conversation.item.created` → `response.created` and
/// `.startModel`. The model's first delta opens the reply item as the Realtime API does
/// (`response.output_item.added`, `conversation.item.created`, `response.content_part.added`) and
/// gives it its place in the history; every delta becomes one `response.output_text.delta` at
/// once, never batched, until the reply's budget (`max_output_tokens`, the history's text budget)
/// is spent; the end closes it (`response.output_text.done`, `response.content_part.done`,
/// `response.output_item.done`) and `response.done` reports status and usage. Speech during a
/// text reply cancels it (barge-in) and keeps in the history only what was delivered; during a
/// spoken reply it first pauses the reply, and `ReplyInterruption` decides whether it barges in
/// (then announced and cancelled the same way) or was a backchannel (resumed, no trace); a turn that ends
/// while a reply runs on (`interrupt_response: false`) is answered when the reply ends.
///
/// A transcription session (`configuration.type`) has the same turns, VAD and recogniser, and
/// never a response: a turn ends at its commit and its transcript, and `response.create` is refused.
public struct SessionEngine: Sendable {
    public struct Options: Sendable {
        /// The model name reported in `session.created`.
        public var model: String
        /// True on `/ws`, where Opus is an audio format; false on `/v1/realtime`.
        public var allowsOpus: Bool
        /// The settings before any `session.update`.
        public var configuration: SessionConfiguration
        /// The history budget (see `ConversationHistory`): the server's, which a session may lower.
        public var maxHistoryMessages: Int
        public var maxHistoryTextBytes: Int
        /// A recogniser is there: spoken turns are transcribed, and answered once their text is in.
        public var transcribes: Bool
        /// The model that hears a session's choice, as `session.created` reports it
        /// (`transcription.model`: `Transcriber.model(for:)`).
        public var transcriptionModel: (@Sendable (TranscriptionChoice) -> String)?
        /// Settings the client may not change (a client secret pinned them).
        public var pinned: Pinned = []
        /// A synthesiser is there: replies with the audio modality are spoken.
        public var synthesizes: Bool
        /// A session restored from the store keeps the id it had.
        public var sessionID: String?
        /// The neural VAD turn detection hears with; nil: the energy detector.
        public var voiceActivityModel: (any VoiceActivityModel)?
        /// Its windows are staged for the loop's batch, scored later in the pass with every other
        /// session's of the loop (the driver's `VoiceActivityPass`; `.voiceActivityScored` brings
        /// them in); false: each scored as it completes (tests, tools without a loop).
        public var batchesVoiceActivity = false
        /// An end-of-turn model is there: `semantic_vad` asks it (`.turnModel`) when the user
        /// goes quiet, instead of waiting out a fixed silence (see `TurnEnding`).
        public var judgesTurns = false
        /// The recogniser decodes a turn as it goes quiet (`SettledWords.decode`) and the
        /// server weighs those words in the turn's end (`--turn-words rules`; see `TurnWords`).
        public var readsTurnWords = false
        /// The server's operating point for `semantic_vad` at `auto` (`TurnEnding.Tuning`).
        public var turnTuning = TurnEnding.Tuning()
        /// What the recogniser answers a quiet with: a whole decode (Whisper), its streaming guess
        /// (pocketsphinx), or nothing; see `ReplyInterruption.settledWords`.
        public var settledWords = SettledWords.decode
        /// Whether a session whose `turn_detection` does not say speculates (`--speculative-replies`;
        /// see `SpeculativeReply`).
        public var speculatesByDefault = false
        /// The server records sessions that ask (`--recordings`); else `recording: true` is refused.
        public var records = false
        /// MCP servers a session may name, the filler while tools run, replies after MCP calls.
        public var tooling = ToolSettings.standard

        public init(model: String = "parley-builtin", allowsOpus: Bool = false, configuration: SessionConfiguration = SessionConfiguration(),
                    maxHistoryMessages: Int = 64, maxHistoryTextBytes: Int = SessionLimits().maxHistoryBytes, transcribes: Bool = false, synthesizes: Bool = false) {
            self.synthesizes = synthesizes
            self.model = model
            self.allowsOpus = allowsOpus
            self.transcribes = transcribes
            self.configuration = configuration
            self.maxHistoryMessages = maxHistoryMessages
            self.maxHistoryTextBytes = maxHistoryTextBytes
        }
    }

    /// Settings a client secret fixed for the session's whole life: `session.update` may not
    /// change them.
    public struct Pinned: OptionSet, Sendable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        public static let instructions = Pinned(rawValue: 1)
        public static let tools = Pinned(rawValue: 2)
        public static let voice = Pinned(rawValue: 4)
        public static let model = Pinned(rawValue: 8)

        /// What an update from a client secret sets.
        public init(_ update: SessionUpdate) {
            self = []
            if update.instructions != nil { insert(.instructions) }
            if update.tools != nil || update.toolChoice != nil { insert(.tools) }
            if update.voice != nil { insert(.voice) }
        }
    }

    // Stored fields are laid out in the order written: the strings and pointers first, the
    // bytes together after `lastSpokenReply`'s odd 25, so that no field pads (an idle session is
    // mostly this struct and the objects around it).
    public let model: String
    package let transcriptionModel: @Sendable (TranscriptionChoice) -> String
    /// The session's settings. Out of line, and absent while they are the Realtime API's defaults,
    /// as every `/v1/realtime` session's are until its first `session.update` (216 bytes each).
    public var configuration: SessionConfiguration { _read { yield settings.value } }
    package var settings = OutOfLine<SessionConfiguration>()
    package var ids: IDGenerator
    /// The conversation, out of line and absent while it is empty (128 bytes of a new session);
    /// made with its first item under the session's budget (`historyBudget`).
    package var conversation: ConversationHistory {
        _read { yield items.value }
        _modify {
            if !items.isHeld { items.value = ConversationHistory(budget: historyBudget) }
            yield &items.value
        }
    }
    package var items = OutOfLine<ConversationHistory>()
    package var audio: InputAudioBuffer
    /// The speech detector, while turn detection is on and audio has come: made with the first
    /// audio (so a session that never speaks holds none), let go when the audio stops between
    /// turns (`audioWentIdle`), and kept out of line (160 bytes).
    package var vad: VoiceActivity? {
        _read { yield detector.value }
        _modify { yield &detector.value }
    }
    package var detector = OutOfLine<VoiceActivity?>()
    /// The neural VAD (Silero) sessions hear with; nil: the energy detector.
    package let voiceActivityModel: (any VoiceActivityModel)?
    package let batchesVoiceActivity: Bool
    /// Session milliseconds at which the detector started (it counts from its own start).
    package var vadOriginMs = 0
    /// The state of turns and replies in progress, out of line: an idle session holds 8 bytes of
    /// it, not 750 (`OutOfLine`). Each field is one fact held once, reached by its own name
    /// (`turns.response`); whether it is at rest is derived (`Turns == .resting`), so a new field
    /// needs no list kept by hand.
    package var turns = OutOfLine<Turns>()
    /// The session's MCP servers, approvals and items (`MCPToolState`): none held until a
    /// session names a server.
    package var mcp = OutOfLine<MCPToolState>()

    package struct Turns: RestingState, Equatable {
        /// Who has the floor: the turn heard, its end pending, a reply it paused (`TurnTaking`).
        package var floor = TurnTaking()
        package var response: Response?
        /// A turn server VAD committed while a response was in flight, to be answered (with
        /// `create_response`) when that response ends. One flag covers any number of turns: they
        /// are all in the history the next response sees.
        package var turnAwaitingResponse = false
        /// The turn whose audio is streaming to the recogniser.
        package var transcribing: String?
        /// Turns committed whose final text has not come yet; a response waits for them.
        package var pendingTranscripts: [String] = []
        /// The latest partial text of the streaming turn, to send only what each one adds.
        package var partialTranscript = ""
        /// The recogniser's latest hypothesis of the streaming turn, rewrites included: what a
        /// speculative reply reads (the deltas sent, `partialTranscript`, only ever grow).
        package var heardWords = ""
        /// `heardWords` are a whole decode up to the turn's quiet (`TranscriptionEvent.settled`):
        /// the words the turn ends with if only silence follows, not a partial's guess.
        package var heardWordsSettled = false
        /// The turn that ended last, with its audio, while the reply to it is unheard: speech now
        /// reopens it (`TurnTaking.Start.reopened`).
        package var reopenable: Reopenable?
        /// Where the speech ended that the recogniser was last told had gone quiet (`quietMs` of
        /// it), so that it is told once per silence and its words are known to be for it.
        package var quietSpeechEndMs: Int?
        /// The quiet (`quietSpeechEndMs`) the speaker was last heard to speak again after, so that
        /// the recogniser is told once per quiet that its decode no longer ends the turn.
        package var spokeAgainAfterMs: Int?
        /// A response asked for (by VAD or the client) while a transcript was pending.
        package var deferredResponse: ResponseOverrides?
        /// A reply begun on the words so far while the end-of-turn model weighs a silence.
        package var speculation: SpeculativeReply?
        /// The words a speculation was cancelled on because the user went on: until newer words
        /// come, another on them would be wasted too.
        package var outspokenWords: OutspokenWords?
        /// Whether a filler is due while a tool runs (`ToolFiller`).
        package var filler = ToolFiller()
        /// The input's line was found noisy (`SessionInput.lineNoisy`): for the rest of the session.
        package var noisyLine = false

        package static let resting = Turns()
        package var isResting: Bool { self == Self.resting }
    }

    package struct Reopenable: Sendable, Equatable {
        package let itemID: String
        package let samples: [Int16]
    }

    package struct OutspokenWords: Sendable, Equatable {
        package let itemID: String
        package let words: [Substring]
    }

    /// The last response's id, for `output_audio_buffer.cleared` after it has ended.
    package var lastResponseID: String?
    /// What one call to `handle` produces; always empty between calls.
    package var outbox: [SessionAction] = []
    /// The last spoken reply and how long its audio is: what a client's truncation is measured
    /// against (the one a client truncates is the one it is playing).
    package var lastSpokenReply: (itemID: String, audioMs: Int)?
    public let allowsOpus: Bool
    package let pinned: Pinned
    public let transcribes: Bool
    public let synthesizes: Bool
    /// Whether an end-of-turn model is there to ask (`Options.judgesTurns`).
    public let judgesTurns: Bool
    /// Whether the words decoded when a turn goes quiet count in its end (`Options.readsTurnWords`).
    package let readsTurnWords: Bool
    package let turnTuning: TurnEnding.Tuning
    package let settledWords: SettledWords
    package let speculatesByDefault: Bool
    package let records: Bool
    package let tooling: ToolSettings
    /// The server's history budget (`--max-history-bytes`), and what the model reads, if known
    /// (32 bits each: the largest context known is a million tokens).
    package let maxHistoryMessages: Int32
    package let maxHistoryBytes: Int32
    package let modelContextTokens: Int32?

    /// `seed` names the session's ids (`sess_…`, `event_…`); pass a random one per session.
    public init(seed: UInt64, options: Options = Options()) {
        ids = IDGenerator(seed: seed)
        restoredID = options.sessionID
        model = options.model
        allowsOpus = options.allowsOpus
        transcribes = options.transcribes
        pinned = options.pinned
        transcriptionModel = options.transcriptionModel ?? { _ in "parley" }
        synthesizes = options.synthesizes
        settings.value = options.configuration
        settings.settle()
        maxHistoryMessages = Int32(clamping: options.maxHistoryMessages)
        maxHistoryBytes = Int32(clamping: options.maxHistoryTextBytes)
        modelContextTokens = ModelContext.inputTokens(model: options.model).map { Int32(clamping: $0) }
        audio = InputAudioBuffer(sampleRate: options.configuration.inputAudioFormat.engineRate)
        voiceActivityModel = options.voiceActivityModel
        batchesVoiceActivity = options.batchesVoiceActivity
        judgesTurns = options.judgesTurns
        readsTurnWords = options.readsTurnWords && options.transcribes
        turnTuning = options.turnTuning
        settledWords = options.settledWords
        speculatesByDefault = options.speculatesByDefault
        records = options.records
        tooling = options.tooling
    }

    /// `sess_` and the id tag. Computed rather than stored: at 18 bytes the string would not fit
    /// inline, and an idle session should own no heap at all.
    public var sessionID: String { restoredID ?? "sess_\(ids.tag)" }
    /// The id of a session restored from the store; new ids get a fresh tag, so none collides
    /// with an item it had.
    package let restoredID: String?
    package var conversationID: String { "conv_\(ids.tag)" }

    /// The conversation as the model will next see it (without the instructions). A reply still
    /// streaming is in its place with no text yet; it gets the text delivered when it ends.
    public var history: [ChatMessage] { conversation.messages }

    /// The rate of the samples `.audio` brings: 16 kHz, or 8 kHz while the input format is G.711
    /// (see `RealtimeAudioFormat.engineRate`).
    public var inputSampleRate: Int { audio.sampleRate }
    /// Windows of this session's audio wait in its loop's batch (`Options.batchesVoiceActivity`):
    /// the driver has the loop score them, then hands the engine `.voiceActivityScored`.
    public var awaitsVoiceActivity: Bool { vad?.awaitsScores ?? false }

    /// Milliseconds of audio the session has received: the audio clock's now.
    public var audioMs: Int { audio.totalMs }

    /// The id of the response being generated, if any.
    public var activeResponseID: String? { turns.response?.id }

    /// The response whose reply user speech has paused, not yet known to be a barge-in.
    public var pausedResponseID: String? { turns.floor.isPaused ? turns.response?.id : nil }

    /// The reply begun before its turn ended, while it is one (`SpeculativeReply`).
    public var speculativeResponseID: String? { turns.speculation?.responseID }

    /// Whether the response `responseID` is in flight and has said something.
    public func hasSaidSomething(responseID: String) -> Bool {
        guard let response = turns.response, response.id == responseID else { return false }
        return response.itemStarted
    }

    /// Nothing is happening: no turn, reply, transcript or speculation in flight.
    public var isAtRest: Bool { !turns.isHeld }

    /// Heap bytes the engine holds (history text, buffered audio, long strings), for the
    /// connection's memory account. Zero for a new session. Stored, and counted again after
    /// every input: read through the driver, a computed figure made Swift copy the whole engine
    /// to run its getter, on every audio frame (1.6 % of the server's CPU at 1,000 speakers).
    public private(set) var accountedBytes = 0
    /// Session milliseconds since which the user has been quiet after a response, for server VAD's
    /// `idle_timeout_ms`; nil while that clock is not running (a turn or response in progress).
    package var idleSinceMs: Int?

    package mutating func recount() {
        accountedBytes = conversation.heapBytes + audio.heapBytes + configuration.heapBytes + (turns.response?.text.utf8.count ?? 0) + (vad?.heapBytes ?? 0)
    }

    /// Which of the session's out-of-line parts it holds now (`OutOfLine`): none, for a session
    /// idle since it opened.
    package var heldOutOfLine: (settings: Bool, history: Bool, detector: Bool, turns: Bool) {
        (settings.isHeld, items.isHeld, detector.isHeld, turns.isHeld)
    }

    /// The session's audio has stopped for a while (the driver lets its decoder go then too): the
    /// neural VAD's stream goes back to its pool, and the next audio takes one with fresh state.
    public mutating func audioWentIdle() {
        if turns.floor.isIdle {
            // Between turns the detector's state is worth nothing the next audio cannot rebuild
            // in a few frames: it goes, and comes back fresh with that audio.
            detector = OutOfLine()
        } else {
            vad?.releaseStream()
        }
        recount()
    }

    /// Puts back the conversation of a session restored from the store, as it was (no events:
    /// its client saw them when they happened).
    package mutating func restore(_ entries: [ConversationHistory.Entry]) {
        for entry in entries { conversation.append(id: entry.id, entry.message, audio: entry.audio) }
        recount()
    }

    /// Whether the conversation ends with a turn nobody answered (a user's, or a function's
    /// output): what a process that went mid-reply leaves behind.
    package var endsUnanswered: Bool {
        guard let last = conversation.last, turns.response == nil else { return false }
        return last.message.role == .user || last.message.role == .tool
    }

    /// The first actions of a session: `session.created`.
    public mutating func start() -> [SessionAction] {
        // Servers named before the session opened (a client secret's, a call's offer) are held
        // to the allow-list as an update's are: one refused is dropped, and the client told.
        var servers = configuration.mcpServers
        var refusals: [EventError] = []
        while let refused = refusedServer(servers) {
            refusals.append(EventError(type: .invalidRequest, code: "mcp_server_not_allowed",
                                       message: "the MCP server '\(refused.entry.label)' (\(refused.entry.endpoint)) is not one this server may call: its operator allows MCP servers with --mcp-allow"))
            servers.remove(at: refused.index)
        }
        if servers.count != configuration.mcpServers.count {
            settings.value.mcpServers = servers
            settings.settle()
        }
        emit(.sessionCreated(sessionInfo))
        fact(.settingsChanged)
        for refusal in refusals { emit(.error(refusal)) }
        if !servers.isEmpty { listServers(servers, forSession: true) }
        return takeOutbox()
    }

    public mutating func handle(_ input: SessionInput) -> [SessionAction] {
        apply(input)
        return takeOutbox()
    }

    package mutating func apply(_ input: SessionInput) {
        // A speculative reply's output is held, unseen, until the turn it answers ends.
        if let speculation = turns.speculation, speculation.owns(input) { return hold(input) }
        switch input {
        case .client(let event): handle(event)
        case .invalidClientEvent(let error): emit(.error(EventError(error)))
        case .audio(let samples): receive(samples)
        case .voiceActivityScored: voiceActivityScored()
        case .lineNoisy: turns.noisyLine = true
        case .audioStopped:
            audioWentIdle()
            if turns.floor.isPaused, case .resume(_, let why)? = turns.floor.pauseAudioStopped() { resumePausedReply(why) }
            if !turns.floor.isIdle, let step = turns.floor.audioStopped() { carryOut(step) }
        case .transcription(let itemID, let event): transcription(itemID, event)
        case .modelDelta(let id, let text): delta(id, text)
        case .modelToolCallStarted(let id, let index, let callID, let name): toolCallStarted(id, index: index, callID: callID, name: name)
        case .modelToolCallArguments(let id, let index, let delta): toolCallArguments(id, index: index, delta)
        case .modelFinished(let id, let usage, let reason):
            guard turns.response?.id == id else { break }
            switch reason {
            case .stop, .toolCalls: complete(.completed, usage: usage)
            case .length: complete(.incomplete, details: .incomplete(reason: "max_output_tokens"), usage: usage)
            }
        case .speechOutput(let id, let event): speechOutput(id, event)
        case .turnVerdict(let itemID, let result): turnVerdict(itemID, result)
        case .mcpToolsListed(let itemID, let result): mcpToolsListed(itemID, result)
        case .mcpToolCalled(let itemID, let result): mcpToolCalled(itemID, result)
        case .toolWaitElapsed(let token): toolWaitElapsed(token)
        case .modelFailed(let id, let code, let message):
            guard turns.response?.id == id else { break }
            let error = EventError(type: .server, code: code, message: message)
            emit(.error(error))
            let speaks = turns.response?.speaks == true
            finish(.failed, details: .failed(error))
            if speaks { outbox.append(.speech(.stop(responseID: id))) }
        }
    }


    // MARK: Emitting

    /// An event with a fresh id, for what the caller sends itself (the reply's audio deltas).
    public mutating func event(_ kind: ServerEvent.Kind) -> ServerEvent {
        ServerEvent(eventID: ids.make("event"), kind)
    }

    package var sessionInfo: SessionInfo {
        SessionInfo(id: sessionID, model: model, configuration: configuration, transcriptionModel: transcribes ? transcriptionModel(configuration.transcription) : nil)
    }

    package mutating func emit(_ kind: ServerEvent.Kind) {
        outbox.append(.send(makeEvent(kind)))
        // Every error a client is sent is one fact, wherever it was found.
        if case .error(let error) = kind { fact(.error(error)) }
    }

    package mutating func fact(_ fact: SessionFact) {
        outbox.append(.fact(fact))
    }

    /// An event with the session's next id, for what the driver reports itself (a turn's timeline).
    public mutating func makeEvent(_ kind: ServerEvent.Kind) -> ServerEvent {
        ServerEvent(eventID: ids.make("event"), kind)
    }

    package mutating func emitError(_ type: EventError.Kind, _ code: String, _ message: String, _ event: ClientEvent) {
        emit(.error(EventError(type: type, code: code, message: message, eventID: event.eventID)))
    }

    package mutating func takeOutbox() -> [SessionAction] {
        if items.isHeld {
            let truncated = conversation.takeTruncated()
            if truncated > 0 { fact(.historyTruncated(items: truncated)) }
            items.settle()
        }
        turns.settle()
        mcp.settle()
        recount()
        defer { outbox = [] }
        return outbox
    }
}
