import JSON
import Models

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
        /// Its name, as `session.created` reports it (`transcription.model`).
        public var transcriptionModel: String?
        /// Settings the client may not change (a client secret pinned them).
        public var pinned: Pinned = []
        /// A synthesiser is there: replies with the audio modality are spoken.
        public var synthesizes: Bool
        /// A session restored from the store keeps the id it had.
        public var sessionID: String?
        /// The neural VAD turn detection hears with; nil: the energy detector.
        public var voiceActivityModel: (any VoiceActivityModel)?
        /// An end-of-turn model is there: `semantic_vad` asks it (`.turnModel`) when the user
        /// goes quiet, instead of waiting out a fixed silence (see `TurnEnding`).
        public var judgesTurns = false
        /// Whether a session whose `turn_detection` does not say speculates (`--speculative-replies`;
        /// see `SpeculativeReply`).
        public var speculatesByDefault = false
        /// The server records sessions that ask (`--recordings`); else `recording: true` is refused.
        public var records = false

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

    /// A turn the detector has heard start and not yet end.
    private struct Speech: Sendable {
        let itemID: String
        /// Where the speech itself began (without the padding), in session milliseconds.
        let onsetMs: Int
        /// `speech_started`'s `audio_start_ms`.
        var audioStartMs = 0
    }

    /// The response being generated.
    private struct Response: Sendable {
        let id: String
        let itemID: String
        let modalities: OutputModalities
        let voice: String
        let outputAudioFormat: RealtimeAudioFormat
        let maxOutputTokens: Int?
        /// The most text the reply may have: the history's whole text budget, and at most four
        /// bytes a token of `maxOutputTokens` (the usage estimate's rate).
        let maxTextBytes: Int
        let inputTokens: Int
        var text = ""
        var itemStarted = false
        /// Where the text item stands in the response's output, once it has begun.
        var messageOutputIndex = 0
        /// The function calls the model has begun, in the order it began them.
        var calls: [Call] = []
        var nextOutputIndex = 0
        let tools: ToolSet?
        let metadata: JSON?
        /// Out of band (`conversation: "none"`): nothing of it joins the conversation.
        var outOfBand = false
        /// The session's `speed` when it began.
        var speed = 1.0
        /// Spoken: its end waits for the speech to be sent.
        var speaks = false
        /// How it ended, held while the last of its speech goes out.
        var ending: Ending?

        struct Call: Sendable {
            /// The model's index for the call (its events name it by this).
            let index: Int
            let itemID: String
            let outputIndex: Int
            let callID: String
            let name: String
            var arguments = ""
        }

        struct Ending: Sendable {
            let status: RealtimeResponse.Status
            let details: RealtimeResponse.StatusDetails?
            let usage: Usage?
        }

        init(id: String, itemID: String, modalities: OutputModalities, voice: String, outputAudioFormat: RealtimeAudioFormat, maxOutputTokens: Int?,
             maxTextBytes: Int, inputTokens: Int, tools: ToolSet?, metadata: JSON?) {
            self.tools = tools
            self.metadata = metadata
            self.id = id
            self.itemID = itemID
            self.modalities = modalities
            self.voice = voice
            self.outputAudioFormat = outputAudioFormat
            self.maxOutputTokens = maxOutputTokens
            self.maxTextBytes = maxOutputTokens.map { min(maxTextBytes, 4 * $0) } ?? maxTextBytes
            self.inputTokens = inputTokens
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
    private let transcriptionModel: String?
    /// The session's settings. Out of line, and absent while they are the Realtime API's defaults,
    /// as every `/v1/realtime` session's are until its first `session.update` (216 bytes each).
    public var configuration: SessionConfiguration { _read { yield settings.value } }
    private var settings = OutOfLine<SessionConfiguration>()
    private var ids: IDGenerator
    /// The conversation, out of line and absent while it is empty (128 bytes of a new session);
    /// made with its first item under the session's budget (`historyBudget`).
    private var conversation: ConversationHistory {
        _read { yield items.value }
        _modify {
            if !items.isHeld { items.value = ConversationHistory(budget: historyBudget) }
            yield &items.value
        }
    }
    private var items = OutOfLine<ConversationHistory>()
    private var audio: InputAudioBuffer
    /// The speech detector, while turn detection is on and audio has come: made with the first
    /// audio (so a session that never speaks holds none), let go when the audio stops between
    /// turns (`audioWentIdle`), and kept out of line (160 bytes).
    private var vad: VoiceActivity? {
        _read { yield detector.value }
        _modify { yield &detector.value }
    }
    private var detector = OutOfLine<VoiceActivity?>()
    /// The neural VAD (Silero) sessions hear with; nil: the energy detector.
    private let voiceActivityModel: (any VoiceActivityModel)?
    /// Session milliseconds at which the detector started (it counts from its own start).
    private var vadOriginMs = 0
    /// The state of turns and replies in progress, out of line: an idle session holds 8 bytes of
    /// it, not 750 (`OutOfLine`). Its fields are below, each reached through its own name.
    private var turns = OutOfLine<Turns>()

    private struct Turns: RestingState {
        var speech: Speech?
        var ending: TurnEnding?
        var pausing: ReplyInterruption?
        var pausingWords: String?
        var response: Response?
        var turnAwaitingResponse = false
        var transcribing: String?
        var pendingTranscripts: [String] = []
        var partialTranscript = ""
        var deferredResponse: ResponseOverrides?
        var speculation: SpeculativeReply?
        var outspokenWords: (itemID: String, words: [Substring])?

        static let resting = Turns()
        var isResting: Bool {
            speech == nil && ending == nil && pausing == nil && pausingWords == nil && response == nil && !turnAwaitingResponse
                && transcribing == nil && pendingTranscripts.isEmpty && partialTranscript.isEmpty && deferredResponse == nil
                && speculation == nil && outspokenWords == nil
        }
    }

    /// The turn the detector has heard start and not yet end.
    private var speech: Speech? {
        _read { yield turns.value.speech }
        _modify { yield &turns.value.speech }
    }
    /// `semantic_vad` with a model: the turn that has gone quiet and may be over (`TurnEnding`).
    private var ending: TurnEnding? {
        _read { yield turns.value.ending }
        _modify { yield &turns.value.ending }
    }
    /// Set while user speech has paused a spoken reply and is not yet known to be a barge-in:
    /// `speech_started` has not been sent for it, and the reply's audio is held.
    private var pausing: ReplyInterruption? {
        _read { yield turns.value.pausing }
        _modify { yield &turns.value.pausing }
    }
    /// The recogniser's latest words for the speech that paused the reply (no delta is sent for an
    /// unconfirmed speech: if it barges in, they go out after `speech_started`).
    private var pausingWords: String? {
        _read { yield turns.value.pausingWords }
        _modify { yield &turns.value.pausingWords }
    }
    private var response: Response? {
        _read { yield turns.value.response }
        _modify { yield &turns.value.response }
    }
    /// A turn server VAD committed while a response was in flight, to be answered (with
    /// `create_response`) when that response ends. One flag covers any number of turns: they are
    /// all in the history the next response sees.
    private var turnAwaitingResponse: Bool {
        _read { yield turns.value.turnAwaitingResponse }
        _modify { yield &turns.value.turnAwaitingResponse }
    }
    /// The turn whose audio is streaming to the recogniser.
    private var transcribing: String? {
        _read { yield turns.value.transcribing }
        _modify { yield &turns.value.transcribing }
    }
    /// Turns committed whose final text has not come yet; a response waits for them.
    private var pendingTranscripts: [String] {
        _read { yield turns.value.pendingTranscripts }
        _modify { yield &turns.value.pendingTranscripts }
    }
    /// The latest partial text of the streaming turn, to send only what each one adds.
    private var partialTranscript: String {
        _read { yield turns.value.partialTranscript }
        _modify { yield &turns.value.partialTranscript }
    }
    /// A response asked for (by VAD or the client) while a transcript was pending.
    private var deferredResponse: ResponseOverrides? {
        _read { yield turns.value.deferredResponse }
        _modify { yield &turns.value.deferredResponse }
    }
    /// A reply begun on the words so far while the end-of-turn model weighs a silence.
    private var speculation: SpeculativeReply? {
        _read { yield turns.value.speculation }
        _modify { yield &turns.value.speculation }
    }
    /// The words a speculation was cancelled on because the user went on: until newer words come,
    /// another on them would be wasted too.
    private var outspokenWords: (itemID: String, words: [Substring])? {
        _read { yield turns.value.outspokenWords }
        _modify { yield &turns.value.outspokenWords }
    }

    /// The last response's id, for `output_audio_buffer.cleared` after it has ended.
    private var lastResponseID: String?
    /// What one call to `handle` produces; always empty between calls.
    private var outbox: [SessionAction] = []
    /// The last spoken reply and how long its audio is: what a client's truncation is measured
    /// against (the one a client truncates is the one it is playing).
    private var lastSpokenReply: (itemID: String, audioMs: Int)?
    public let allowsOpus: Bool
    private let pinned: Pinned
    public let transcribes: Bool
    public let synthesizes: Bool
    /// Whether an end-of-turn model is there to ask (`Options.judgesTurns`).
    public let judgesTurns: Bool
    private let speculatesByDefault: Bool
    private let records: Bool
    /// The server's history budget (`--max-history-bytes`), and what the model reads, if known
    /// (32 bits each: the largest context known is a million tokens).
    private let maxHistoryMessages: Int32
    private let maxHistoryBytes: Int32
    private let modelContextTokens: Int32?

    /// `seed` names the session's ids (`sess_…`, `event_…`); pass a random one per session.
    public init(seed: UInt64, options: Options = Options()) {
        ids = IDGenerator(seed: seed)
        restoredID = options.sessionID
        model = options.model
        allowsOpus = options.allowsOpus
        transcribes = options.transcribes
        pinned = options.pinned
        transcriptionModel = options.transcriptionModel ?? "parley"
        synthesizes = options.synthesizes
        settings.value = options.configuration
        settings.settle()
        maxHistoryMessages = Int32(clamping: options.maxHistoryMessages)
        maxHistoryBytes = Int32(clamping: options.maxHistoryTextBytes)
        modelContextTokens = ModelContext.inputTokens(model: options.model).map { Int32(clamping: $0) }
        audio = InputAudioBuffer(sampleRate: options.configuration.inputAudioFormat.engineRate)
        voiceActivityModel = options.voiceActivityModel
        judgesTurns = options.judgesTurns
        speculatesByDefault = options.speculatesByDefault
        records = options.records
    }

    /// `sess_` and the id tag. Computed rather than stored: at 18 bytes the string would not fit
    /// inline, and an idle session should own no heap at all.
    public var sessionID: String { restoredID ?? "sess_\(ids.tag)" }
    /// The id of a session restored from the store; new ids get a fresh tag, so none collides
    /// with an item it had.
    private let restoredID: String?
    private var conversationID: String { "conv_\(ids.tag)" }

    /// The conversation as the model will next see it (without the instructions). A reply still
    /// streaming is in its place with no text yet; it gets the text delivered when it ends.
    public var history: [ChatMessage] { conversation.messages }

    /// The rate of the samples `.audio` brings: 16 kHz, or 8 kHz while the input format is G.711
    /// (see `RealtimeAudioFormat.engineRate`).
    public var inputSampleRate: Int { audio.sampleRate }

    /// Milliseconds of audio the session has received: the audio clock's now.
    public var audioMs: Int { audio.totalMs }

    /// The id of the response being generated, if any.
    public var activeResponseID: String? { response?.id }

    /// Heap bytes the engine holds (history text, buffered audio, long strings), for the
    /// connection's memory account. Zero for a new session. Stored, and counted again after
    /// every input: read through the driver, a computed figure made Swift copy the whole engine
    /// to run its getter, on every audio frame (1.6 % of the server's CPU at 1,000 speakers).
    public private(set) var accountedBytes = 0
    /// Session milliseconds since which the user has been quiet after a response, for server VAD's
    /// `idle_timeout_ms`; nil while that clock is not running (a turn or response in progress).
    private var idleSinceMs: Int?

    private mutating func recount() {
        accountedBytes = conversation.heapBytes + audio.heapBytes + configuration.heapBytes + (response?.text.utf8.count ?? 0) + (vad?.heapBytes ?? 0)
    }

    /// Which of the session's out-of-line parts it holds now (`OutOfLine`): none, for a session
    /// idle since it opened.
    var heldOutOfLine: (settings: Bool, history: Bool, detector: Bool, turns: Bool) {
        (settings.isHeld, items.isHeld, detector.isHeld, turns.isHeld)
    }

    /// The session's audio has stopped for a while (the driver lets its decoder go then too): the
    /// neural VAD's stream goes back to its pool, and the next audio takes one with fresh state.
    public mutating func audioWentIdle() {
        if speech == nil && pausing == nil {
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
    mutating func restore(_ entries: [ConversationHistory.Entry]) {
        for entry in entries { conversation.append(id: entry.id, entry.message, audio: entry.audio) }
        recount()
    }

    /// Whether the conversation ends with a turn nobody answered (a user's, or a function's
    /// output): what a process that went mid-reply leaves behind.
    var endsUnanswered: Bool {
        guard let last = conversation.last, response == nil else { return false }
        return last.message.role == .user || last.message.role == .tool
    }

    /// The first actions of a session: `session.created`.
    public mutating func start() -> [SessionAction] {
        emit(.sessionCreated(sessionInfo))
        return takeOutbox()
    }

    public mutating func handle(_ input: SessionInput) -> [SessionAction] {
        apply(input)
        return takeOutbox()
    }

    private mutating func apply(_ input: SessionInput) {
        // A speculative reply's output is held, unseen, until the turn it answers ends.
        if let speculation, speculation.owns(input) { return hold(input) }
        switch input {
        case .client(let event): handle(event)
        case .invalidClientEvent(let error): emit(.error(EventError(error)))
        case .audio(let samples): receive(samples)
        case .audioStopped:
            audioWentIdle()
            if let decision = ending?.audioStopped() { applyEnding(decision) }
        case .transcription(let itemID, let event): transcription(itemID, event)
        case .modelDelta(let id, let text): delta(id, text)
        case .modelToolCallStarted(let id, let index, let callID, let name): toolCallStarted(id, index: index, callID: callID, name: name)
        case .modelToolCallArguments(let id, let index, let delta): toolCallArguments(id, index: index, delta)
        case .modelFinished(let id, let usage, let reason):
            guard response?.id == id else { break }
            switch reason {
            case .stop, .toolCalls: complete(.completed, usage: usage)
            case .length: complete(.incomplete, details: .incomplete(reason: "max_output_tokens"), usage: usage)
            }
        case .speechOutput(let id, let event): speechOutput(id, event)
        case .turnVerdict(let itemID, let result): turnVerdict(itemID, result)
        case .modelFailed(let id, let code, let message):
            guard response?.id == id else { break }
            let error = EventError(type: .server, code: code, message: message)
            emit(.error(error))
            let speaks = response?.speaks == true
            finish(.failed, details: .failed(error))
            if speaks { outbox.append(.speech(.stop(responseID: id))) }
        }
    }

    // MARK: Client events

    private mutating func handle(_ event: ClientEvent) {
        switch event.kind {
        case .sessionUpdate(let update):
            for (setting, given, param) in [(Pinned.instructions, update.instructions != nil, "session.instructions"),
                                            (.tools, update.tools != nil || update.toolChoice != nil, "session.tools"),
                                            (.voice, update.voice != nil, "session.voice")] where given && pinned.contains(setting) {
                return emit(.error(EventError(ProtocolError(.invalidValue, "'\(param)' is fixed by the client secret this session was opened with",
                                                           param: param, eventID: event.eventID))))
            }
            if update.recording == true, !records {
                return emitError(.invalidRequest, "recording_not_allowed",
                                 "this server does not record sessions ('session.recording'): its operator starts it with --recordings DIR to allow it", event)
            }
            if let bytes = update.maxHistoryBytes, bytes > Int(maxHistoryBytes) {
                return emitError(.invalidRequest, "invalid_value",
                                 "'session.max_history_bytes' may be at most \(maxHistoryBytes), this server's history budget (--max-history-bytes)", event)
            }
            do {
                try settings.value.apply(update, allowsOpus: allowsOpus)
                settings.settle()
            } catch {
                var error = error
                error.eventID = event.eventID
                emit(.error(EventError(error)))
                return
            }
            // The reply begun may no longer be the one these settings would ask for (tools, voice).
            dropSpeculation(.restarted)
            if items.isHeld { conversation.setBudget(historyBudget) }
            inputRateChanged()
            turnDetectionChanged()
            emit(.sessionUpdated(sessionInfo))
        case .inputAudioCommit:
            guard audio.pendingSamples > 0 else {
                emitError(.invalidRequest, "input_audio_buffer_commit_empty", "the input audio buffer is empty: append audio before committing it", event)
                return
            }
            // The client wants the speech as a turn: a pause it caused becomes a barge-in.
            if pausing != nil { bargeIn() }
            if let speech {
                forgetEnding()
                self.speech = nil
                vad?.endSpeech()
                commit(itemID: speech.itemID, spokenMs: audio.totalMs - speech.onsetMs)
            } else if configuration.turnDetection != nil {
                // Between turns server VAD keeps only the padding for the next one: silence, not a turn.
                emitError(.invalidRequest, "input_audio_buffer_commit_empty",
                          "no speech since the last commit: server VAD has heard no turn to commit", event)
            } else {
                commit(itemID: ids.make("item"), spokenMs: audio.pendingMs)
            }
            dropSpeculation(.cancelled)
        case .inputAudioClear:
            audio.clear()
            emit(.inputAudioCleared)
            cancelTranscription()
            dropSpeculation(.cancelled)
            if speech != nil {
                forgetEnding()
                speech = nil
                vad?.endSpeech()
                endPause()
                // A waiting turn deferred to the cleared one's end is answered now.
                answerWaitingTurn()
            }
        case .conversationItemCreate(let new):
            createItem(new, event)
        case .responseCreate(let overrides):
            guard configuration.type == .realtime else {
                return emitError(.invalidRequest, "invalid_session_type",
                                 "response.create is not available in a transcription session: it transcribes the audio it hears and never responds (open a realtime session for responses)", event)
            }
            if overrides.tools != nil || overrides.toolChoice != nil {
                let tools = overrides.tools.map { $0.tools.isEmpty ? nil : $0 } ?? configuration.tools
                do {
                    try ToolsField.check(overrides.toolChoice ?? configuration.toolChoice, against: tools, param: "response.tool_choice")
                } catch {
                    var error = error
                    error.eventID = event.eventID
                    return emit(.error(EventError(error)))
                }
            }
            if let response {
                emitError(.invalidRequest, "conversation_already_has_active_response",
                          "the conversation already has an active response in progress: \(response.id); cancel it or wait for response.done", event)
                return
            }
            startResponse(overrides)
        case .responseCancel(let id):
            guard let response, id == nil || id == response.id else {
                let message = id.map { "response \($0) is not in progress" } ?? "there is no response in progress to cancel"
                emitError(.invalidRequest, "response_cancel_not_active", message, event)
                return
            }
            cancel(response.id, reason: "client_cancelled")
        case .conversationItemRetrieve(let itemID):
            guard let entry = conversation.entry(itemID) else { return itemNotFound(itemID, event) }
            emit(.conversationItemRetrieved(Self.item(entry)))
        case .conversationItemDelete(let itemID):
            if let response, response.itemID == itemID || response.calls.contains(where: { $0.itemID == itemID }) {
                return emitError(.invalidRequest, "invalid_value", "item '\(itemID)' belongs to the response in progress; cancel it first", event)
            }
            guard conversation.delete(itemID) else { return itemNotFound(itemID, event) }
            emit(.conversationItemDeleted(itemID: itemID))
        case .outputAudioBufferClear:
            // The Realtime API has the client cancel first; a spoken reply still running is cut
            // off here all the same (its speech stops, the history keeps what was heard).
            let id = response?.id ?? lastResponseID ?? ""
            if let response, response.speaks { cancel(response.id, reason: "client_cancelled") }
            emit(.outputAudioBufferCleared(responseID: id))
        case .conversationItemTruncate(let itemID, let contentIndex, let audioEndMs):
            truncate(itemID, contentIndex: contentIndex, audioEndMs: audioEndMs, event)
        }
    }

    private mutating func itemNotFound(_ itemID: String, _ event: ClientEvent) {
        emitError(.invalidRequest, "item_not_found", "item '\(itemID)' is not in the conversation", event)
    }

    /// The client played only `audioEndMs` of a spoken reply (it was interrupted): the history keeps
    /// the part of the transcript that was heard, in proportion to the audio played when the
    /// reply's length is known, cut back to a word, so the model does not "remember" saying the rest.
    private mutating func truncate(_ itemID: String, contentIndex: Int, audioEndMs: Int, _ event: ClientEvent) {
        guard let entry = conversation.entry(itemID) else { return itemNotFound(itemID, event) }
        guard entry.message.role == .assistant, entry.audio else {
            return emitError(.invalidRequest, "invalid_value", "item '\(itemID)' holds no assistant audio to truncate", event)
        }
        guard contentIndex == 0 else {
            return emitError(.invalidRequest, "invalid_value", "'content_index' must be 0: a reply has one audio part", event)
        }
        if let spoken = lastSpokenReply, spoken.itemID == itemID {
            guard audioEndMs <= spoken.audioMs else {
                return emitError(.invalidRequest, "invalid_value", "'audio_end_ms' \(audioEndMs) is past the item's audio (\(spoken.audioMs) ms)", event)
            }
            let text = entry.message.text
            let keep = spoken.audioMs == 0 ? 0 : text.count * audioEndMs / spoken.audioMs
            conversation.setText(Self.wordPrefix(of: text, characters: keep), of: itemID)
        }
        emit(.conversationItemTruncated(itemID: itemID, contentIndex: contentIndex, audioEndMs: audioEndMs))
    }

    /// The first `characters` of `text`, cut back to the end of a word (all of it when it fits).
    static func wordPrefix(of text: String, characters: Int) -> String {
        guard characters < text.count else { return text }
        let cut = text.prefix(max(0, characters))
        guard let space = cut.lastIndex(where: { $0 == " " || $0 == "\n" }) else { return "" }
        return String(cut[..<space])
    }

    /// An item of the history as the Realtime API shows it.
    private static func item(_ entry: ConversationHistory.Entry) -> ConversationItem {
        let message = entry.message
        if let call = message.toolCalls.first {
            return ConversationItem(id: entry.id, role: .assistant, status: .completed, content: [],
                                    function: .call(callID: call.id, name: call.name, arguments: call.arguments))
        }
        if message.role == .tool, let callID = message.toolCallID {
            return ConversationItem(id: entry.id, role: .tool, status: .completed, content: [], function: .output(callID: callID, output: message.text))
        }
        let content: ConversationItem.Content = switch (message.role, entry.audio) {
        case (.assistant, true): .outputAudio(transcript: message.text)
        case (.assistant, false): .outputText(message.text)
        case (_, true): .inputAudio(transcript: message.spokenMilliseconds == nil ? message.text : nil)
        case (_, false): .inputText(message.text)
        }
        return ConversationItem(id: entry.id, role: message.role, status: .completed, content: [content])
    }

    /// The input format changed to one heard at another rate (G.711 at 8 kHz, pcm16 and Opus at
    /// 16 kHz): the audio buffered at the old rate is dropped and a turn in progress forgotten, as
    /// `input_audio_buffer.clear` would (without its event: the client changed what it sends), and
    /// the detector starts over at the new rate.
    private mutating func inputRateChanged() {
        let rate = configuration.inputAudioFormat.engineRate
        guard rate != audio.sampleRate else { return }
        audio.change(sampleRate: rate)
        cancelTranscription()
        // The detector starts over at the new rate with the next audio.
        detector = OutOfLine()
        if speech != nil {
            forgetEnding()
            speech = nil
            endPause()
            answerWaitingTurn()
        }
    }

    private mutating func turnDetectionChanged() {
        switch (configuration.turnDetection, vad) {
        case (nil, nil): break
        case (nil, .some):
            // Manual turns from now on; audio already buffered stays for the client to commit.
            detector = OutOfLine()
            forgetEnding()
            speech = nil
            endPause()
            cancelTranscription()
            turnAwaitingResponse = false
        case (_?, nil):
            // Made with the next audio (`receive`).
            break
        case (let settings?, .some):
            let detector = detectorSettings(settings)
            vad?.settings = detector
            // A turn gone quiet while the model judged it, now under plain silence: it has been
            // quiet long enough to have stopped the detector, so it ends here.
            if let pending = ending, settings.semanticEagerness == nil {
                forgetEnding()
                endTurn(atMs: pending.speechEndMs, .silence)
            }
        }
    }

    /// The detector's silence: with a model to ask, `semantic_vad` stops listening at a short
    /// silence and lets the model judge (`TurnEnding.probeMs`); otherwise the silence that ends a turn.
    private func detectorSettings(_ vad: ServerVAD) -> VoiceActivityDetector.Settings {
        Self.detectorSettings(vad, judgesTurns: judgesTurns)
    }

    private static func detectorSettings(_ vad: ServerVAD, judgesTurns: Bool) -> VoiceActivityDetector.Settings {
        let silenceMs = judgesTurns && vad.semanticEagerness != nil ? TurnEnding.probeMs : vad.silenceDurationMs
        return .init(threshold: vad.threshold, prefixPaddingMs: vad.prefixPaddingMs, silenceDurationMs: silenceMs)
    }

    // MARK: Audio and turns

    private mutating func receive(_ samples: [Int16]) {
        guard !samples.isEmpty else { return }
        // Audio of a turn already streaming goes to the recogniser; a turn that starts in this
        // piece gets it with its beginning.
        if transcribing != nil { outbox.append(.transcription(.audio(samples))) }
        if vad == nil, let settings = configuration.turnDetection {
            vad = VoiceActivity(model: voiceActivityModel, sampleRate: audio.sampleRate, settings: detectorSettings(settings))
            vadOriginMs = audio.totalMs
        }
        let wasNeural = vad?.isNeural ?? false
        let events = vad?.process(samples) ?? []
        // The model could make no stream for this session: the energy detector took over, with
        // its clock starting at these samples.
        if wasNeural, vad?.isNeural == false { vadOriginMs = audio.totalMs }
        audio.append(samples)
        for event in events {
            switch event {
            case .speechStarted(let ms): speechStarted(atMs: vadOriginMs + ms)
            case .speechStopped(let ms): speechStopped(atMs: vadOriginMs + ms)
            }
        }
        if pausing != nil, let vad, let speech,
           case .bargeIn? = pausing?.heard(speechMs: vadOriginMs + vad.lastSpeechEndMs - speech.onsetMs) {
            bargeIn()
        }
        // Read first: the mutating call would make the turns' box on every frame between turns
        // (`OutOfLine` makes it on a write), only for `settle` to free it again.
        let nowMs = audio.totalMs
        if ending != nil, let decision = ending?.audio(atMs: nowMs) { applyEnding(decision) }
        checkIdleTimeout()
        if let vad, speech == nil {
            // Between turns only the padding the next start may reach back for is worth keeping
            // (plus the detector's look-back of up to 130 ms, and some margin).
            audio.keepLast(ms: vad.settings.prefixPaddingMs + 300)
        }
    }

    /// `idle_timeout_ms`: the user said nothing for that long after a response. The silence is
    /// committed as a turn and answered, so the model can ask whether anyone is still there.
    private mutating func checkIdleTimeout() {
        guard configuration.type == .realtime, let timeout = configuration.turnDetection?.idleTimeoutMs, let since = idleSinceMs, speech == nil, response == nil,
              pendingTranscripts.isEmpty, audio.totalMs - since >= timeout else { return }
        idleSinceMs = nil
        let itemID = ids.make("item")
        emit(.inputAudioTimeoutTriggered(audioStartMs: since, audioEndMs: audio.totalMs, itemID: itemID))
        commit(itemID: itemID, spokenMs: 0)
        if configuration.turnDetection?.createResponse ?? true { startResponse(ResponseOverrides()) }
    }

    private mutating func speechStarted(atMs ms: Int) {
        // The user went on after a silence the model was judging: the same turn continues.
        if speech != nil, var ending, ending.isPending {
            let decision = ending.speechResumed()
            self.ending = ending
            if let speculation { outspokenWords = (speculation.itemID, SpeculativeReply.words(speculation.transcript)) }
            dropSpeculation(.cancelled)
            if let decision { applyEnding(decision) }
            return
        }
        idleSinceMs = nil
        let itemID = ids.make("item")
        speech = Speech(itemID: itemID, onsetMs: vadOriginMs + (vad?.speechOnsetMs ?? 0), audioStartMs: ms)
        audio.keep(fromMs: ms)
        let reply: ReplyInterruption.Reply = response.map { $0.speaks ? .spoken : .text } ?? .none
        let settings = configuration.turnDetection ?? ServerVAD()
        let (machine, decision) = ReplyInterruption.speechStarted(during: reply, interruptResponse: settings.interruptResponse,
                                                                  settings: settings.interruption, expectsWords: transcribes)
        if decision == .pause, let response {
            // Not yet a turn: no event until it is confirmed, since clients flush their playback
            // on `speech_started`. The reply's audio is held, the response stays alive.
            pausing = machine
            pausingWords = nil
            emit(.replyPaused(responseID: response.id))
            outbox.append(.speech(.pause(responseID: response.id)))
        } else {
            emit(.speechStarted(audioStartMs: ms, itemID: itemID))
        }
        if transcribes {
            // Streamed from the start either way: a paused reply's fate may hang on the words.
            cancelTranscription()
            transcribing = itemID
            partialTranscript = ""
            outbox.append(.transcription(.begin(itemID: itemID, audio: audio.samples, sampleRate: audio.sampleRate)))
        }
        if decision == .bargeIn, let response {
            cancel(response.id, reason: "turn_detected")
        }
    }

    /// The speech that paused the reply is a barge-in: it is announced as the turn it is
    /// (`speech_started`, with the start it had), then the response is cancelled and the reply
    /// truncated at what was heard, exactly as an immediate barge-in does.
    private mutating func bargeIn() {
        guard pausing != nil, let speech else { return }
        pausing = nil
        emit(.speechStarted(audioStartMs: speech.audioStartMs, itemID: speech.itemID))
        if let response { cancel(response.id, reason: "turn_detected") }
        if let words = pausingWords, transcribing == speech.itemID { partialArrived(speech.itemID, words) }
        pausingWords = nil
    }

    /// The speech that paused the reply ended unconfirmed (a backchannel, a noise, a short
    /// sound): the reply resumes and the speech leaves nothing behind. No event was sent for it,
    /// so none is; its audio is dropped with the padding kept between turns, its transcription
    /// cancelled, and no item is made, so the model never answers "uh-huh".
    private mutating func resume(_ decision: ReplyInterruption.Decision) {
        guard pausing != nil, case .resume(let why) = decision else { return }
        pausing = nil
        pausingWords = nil
        speech = nil
        cancelTranscription()
        if let response {
            emit(.replyResumed(responseID: response.id, reason: why == .backchannel ? "backchannel" : "short"))
            outbox.append(.speech(.resume(responseID: response.id, why)))
        }
    }

    /// A pause that no longer stands (the audio was cleared, turn detection switched off, the
    /// reply ended): the held audio, if any, is released.
    private mutating func endPause() {
        guard pausing != nil else { return }
        pausing = nil
        pausingWords = nil
        if let response {
            emit(.replyResumed(responseID: response.id, reason: "short"))
            outbox.append(.speech(.resume(responseID: response.id, .short)))
        }
    }

    private mutating func speechStopped(atMs ms: Int) {
        guard speech != nil else { return }
        if let machine = pausing { return resume(machine.speechStopped()) }
        if judgesTurns, let eagerness = configuration.turnDetection?.semanticEagerness {
            var ending = ending ?? TurnEnding(settings: eagerness.turnEnding)
            let decision = ending.silenceHeard(speechEndMs: ms)
            self.ending = ending
            return applyEnding(decision)
        }
        endTurn(atMs: ms, .silence)
    }

    /// The turn is over: `speech_stopped` where its speech ended, the commit, and the answer.
    private mutating func endTurn(atMs ms: Int, _ cause: TurnEnding.Cause) {
        guard let speech else { return }
        self.speech = nil
        ending = nil
        outbox.append(.turnEnded(cause))
        emit(.speechStopped(audioEndMs: ms, itemID: speech.itemID))
        commit(itemID: speech.itemID, spokenMs: ms - speech.onsetMs)
        // A transcription session's turn ends with its transcript; no model is ever asked.
        guard configuration.type == .realtime, configuration.turnDetection?.createResponse ?? true else { return dropSpeculation(.cancelled) }
        if response == nil {
            startResponse(ResponseOverrides())
        } else {
            turnAwaitingResponse = true
        }
    }

    // MARK: Semantic end of turn

    private mutating func applyEnding(_ decision: TurnEnding.Decision) {
        guard let speech else { return }
        switch decision {
        case .ask:
            let rate = audio.sampleRate
            outbox.append(.turnModel(.judge(itemID: speech.itemID, audio: Array(audio.samples.suffix(TurnEnding.maxSeconds * rate)), sampleRate: rate)))
            speculate()
        case .withdraw:
            outbox.append(.turnModel(.cancel(itemID: speech.itemID)))
        case .end(let cause):
            endTurn(atMs: ending?.speechEndMs ?? audio.totalMs, cause)
        }
    }

    /// The model's answer about the turn `itemID` (a late one, for a turn that went on or ended, is dropped).
    private mutating func turnVerdict(_ itemID: String, _ result: Result<TurnVerdict, ModelError>) {
        guard speech?.itemID == itemID, var ending, ending.isAsking else { return }
        switch result {
        case .success(let verdict):
            let decision = ending.verdict(verdict)
            self.ending = ending
            if let decision { applyEnding(decision) }
        case .failure:
            ending.modelFailed()
            self.ending = ending
        }
        // The silence already heard may be enough for the rule that now applies.
        let nowMs = audio.totalMs
        if let decision = self.ending?.audio(atMs: nowMs) { applyEnding(decision) }
    }

    /// Whatever the model was asked about the turn is no longer wanted.
    private mutating func forgetEnding() {
        dropSpeculation(.cancelled)
        guard let pending = ending else { return }
        ending = nil
        if pending.isAsking, let speech { outbox.append(.turnModel(.cancel(itemID: speech.itemID))) }
    }

    /// Answers the turn that waited for a response to end, once nothing stands in its way: no
    /// response in flight, and the user not speaking (a turn in progress gets its own response
    /// when it ends, which covers the waiting one too).
    private mutating func answerWaitingTurn() {
        guard turnAwaitingResponse, response == nil, speech == nil else { return }
        turnAwaitingResponse = false
        if configuration.turnDetection?.createResponse == true { startResponse(ResponseOverrides()) }
    }

    /// Makes the buffered audio a user item. The samples are released here; a transcriber, when
    /// there is one, will take them first.
    private mutating func commit(itemID: String, spokenMs: Int) {
        let previous = conversation.lastItemID
        // The item's events go before the recogniser is told to finish: a recogniser whose last
        // decode already covers the turn answers at once, inside this action list, and its
        // `…transcription.completed` must follow `committed` and the item, as the API orders them.
        emit(.inputAudioCommitted(itemID: itemID, previousItemID: previous))
        let item = ConversationItem(id: itemID, role: .user, status: .completed, content: [.inputAudio(transcript: nil)])
        emit(.conversationItemCreated(item, previousItemID: previous))
        emit(.conversationItemDone(item, previousItemID: previous))
        if transcribes {
            // A turn committed by hand was not streaming: all its audio goes now.
            if transcribing != itemID {
                cancelTranscription()
                outbox.append(.transcription(.begin(itemID: itemID, audio: audio.samples, sampleRate: audio.sampleRate)))
            }
            outbox.append(.transcription(.finish(itemID: itemID)))
            transcribing = nil
            pendingTranscripts.append(itemID)
        }
        _ = audio.take()
        conversation.append(id: itemID, ChatMessage.untranscribedSpeech(milliseconds: max(0, spokenMs)), audio: true)
    }

    // MARK: Transcription

    private mutating func cancelTranscription() {
        guard let itemID = transcribing else { return }
        outbox.append(.transcription(.cancel(itemID: itemID)))
        transcribing = nil
    }

    private mutating func transcription(_ itemID: String, _ event: TranscriptionEvent) {
        let streaming = transcribing == itemID
        guard streaming || pendingTranscripts.contains(itemID) else { return }  // cancelled: late
        switch event {
        case .partial(let text):
            if pausing != nil, streaming {
                // Unconfirmed speech: its words decide the paused reply's fate and are not sent yet.
                pausingWords = text
                if case .bargeIn? = pausing?.recognised(text) { bargeIn() }
                return
            }
            partialArrived(itemID, text)
        case .final(let words):
            // Providers pad their text differently (an API's leading space); the user's message does not.
            let text = words.trimmed
            let spokenMs = conversation.entry(itemID)?.message.spokenMilliseconds ?? 0
            emit(.inputAudioTranscriptionCompleted(itemID: itemID, contentIndex: 0, transcript: text, audioSeconds: Double(spokenMs) / 1000))
            if !text.isEmpty { conversation.setTranscript(text, of: itemID) }
            transcriptArrived(itemID, answer: true)
        case .failed where streaming && !pendingTranscripts.contains(itemID):
            // The turn is still going (the recogniser failed mid-stream: a helper that died): it
            // is sent whole again when it ends, and only a failure then is the item's to report,
            // after the item exists.
            transcribing = nil
        case .failed(let error):
            let eventError = EventError(type: .server, code: error.code, message: error.message)
            emit(.inputAudioTranscriptionFailed(itemID: itemID, contentIndex: 0, error: eventError))
            // Overloaded: the turn is refused, said as an error, rather than answered blind.
            let overloaded = error.code == "overloaded"
            if overloaded { emit(.error(eventError)) }
            transcriptArrived(itemID, answer: !overloaded)
        }
    }

    private mutating func partialArrived(_ itemID: String, _ text: String) {
        // Only growth is sent: a hypothesis that rewrites earlier words waits for the final.
        if text.hasPrefix(partialTranscript), text.count > partialTranscript.count {
            emit(.inputAudioTranscriptionDelta(itemID: itemID, contentIndex: 0, delta: String(text.dropFirst(partialTranscript.count))))
            partialTranscript = text
        }
        // Words heard while the model weighs a silence: what a speculative reply should read.
        if ending?.isPending == true { speculate() }
    }

    private mutating func transcriptArrived(_ itemID: String, answer: Bool) {
        pendingTranscripts.removeAll { $0 == itemID }
        if transcribing == itemID { transcribing = nil }
        if !answer { dropSpeculation(.cancelled) }
        guard pendingTranscripts.isEmpty, let overrides = deferredResponse else { return }
        deferredResponse = nil
        if answer && response == nil { startResponse(overrides) }
    }

    // MARK: Responses

    /// The session's history budget: the server's, or less if the session asked
    /// (`max_history_bytes`), and the model's context less the instructions, or less if the
    /// session's truncation says (`token_limits.post_instructions`).
    private var historyBudget: ConversationHistory.Budget {
        var tokens = modelContextTokens.map { max(0, Int($0) - Usage.estimatedTokens(configuration.instructions)) }
        if case .retentionRatio(_, let limit?) = configuration.truncation { tokens = min(tokens ?? limit, limit) }
        let serverBytes = Int(maxHistoryBytes)
        return ConversationHistory.Budget(maxMessages: Int(maxHistoryMessages), maxBytes: min(configuration.maxHistoryBytes ?? serverBytes, serverBytes),
                                          maxTokens: tokens, truncation: configuration.truncation)
    }

    private mutating func startResponse(_ overrides: ResponseOverrides) {
        // The model should read what the user said, so it waits for the words.
        guard pendingTranscripts.isEmpty else {
            deferredResponse = overrides
            return
        }
        let request = modelRequest(overrides, conversation.messages)
        // With truncation disabled, an outgrown conversation is the client's to shorten: the
        // model is not asked (a response with its own `input` does not read the conversation).
        let outgrown = overrides.input == nil && conversation.exceedsBudget
        if outgrown { dropSpeculation(.cancelled) }
        // A speculative reply that read what this one would read is this one, begun earlier.
        var speculative: SpeculativeReply?
        if let speculation {
            if overrides == ResponseOverrides(), speculation.answers(request.messages) {
                speculative = speculation
                self.speculation = nil
            } else {
                dropSpeculation(.restarted)
            }
        }
        var new = Response(id: speculative?.responseID ?? ids.make("resp"), itemID: ids.make("item"), modalities: request.options.outputModalities,
                           voice: configuration.voice, outputAudioFormat: configuration.outputAudioFormat, maxOutputTokens: request.options.maxOutputTokens,
                           maxTextBytes: historyBudget.maxBytes, inputTokens: Usage.estimatedInputTokens(request.messages), tools: request.options.tools,
                           metadata: overrides.metadata)
        new.outOfBand = overrides.outOfBand
        new.speed = configuration.speed
        new.speaks = synthesizes && new.modalities.contains(.audio)
        response = new
        // It sees the whole history, so it answers any turn that was waiting too.
        turnAwaitingResponse = false
        emit(.responseCreated(snapshot(new, status: .inProgress, details: nil, output: [], usage: nil)))
        if outgrown {
            let budget = historyBudget
            let error = EventError(type: .invalidRequest, code: "context_length_exceeded",
                                   message: "the conversation holds \(conversation.count) items, \(conversation.textBytes) bytes of text (about \(conversation.tokens) tokens), over this session's budget of \(budget.maxMessages) items, \(budget.maxBytes) bytes"
                                       + (budget.maxTokens.map { ", \($0) tokens" } ?? "") + "; truncation is disabled: delete items (conversation.item.delete) or set session.truncation")
            emit(.error(error))
            return finish(.failed, details: .failed(error))
        }
        guard let speculative else {
            return outbox.append(.startModel(responseID: new.id, messages: request.messages, options: request.options))
        }
        // What it said while the turn was ending is handled now, as if it had just arrived.
        outbox.append(.speculationEnded(responseID: new.id, .used, tokens: 0, answered: speculative.hasOutput))
        for input in speculative.held { apply(input) }
    }

    /// The messages and options a response with `overrides` sends the model, after `history`.
    private func modelRequest(_ overrides: ResponseOverrides, _ history: [ChatMessage]) -> (messages: [ChatMessage], options: ModelOptions) {
        let instructions = overrides.instructions ?? configuration.instructions
        let maxTokens: Int? = switch overrides.maxOutputTokens {
        case nil: configuration.maxOutputTokens
        case .unlimited: nil
        case .limited(let n): n
        }
        var messages = history
        if let input = overrides.input { messages = input.compactMap { inputMessage($0) } }
        if !instructions.isEmpty { messages.insert(ChatMessage(role: .system, text: instructions), at: 0) }
        let modalities = overrides.outputModalities ?? configuration.outputModalities
        return (messages, ModelOptions(maxOutputTokens: maxTokens, outputModalities: modalities, voice: configuration.voice,
                                       outputAudioFormat: configuration.outputAudioFormat,
                                       tools: overrides.tools.map { $0.tools.isEmpty ? nil : $0 } ?? configuration.tools,
                                       toolChoice: overrides.toolChoice ?? configuration.toolChoice))
    }

    // MARK: Speculative replies

    /// Never in a transcription session, which asks no model at all.
    private var speculates: Bool { configuration.type == .realtime && (configuration.turnDetection?.speculativeResponse ?? speculatesByDefault) }

    /// The end-of-turn model is weighing a silence, and these are the user's words so far: the
    /// reply starts on them, unheard (or starts again, if the words have changed since).
    private mutating func speculate() {
        let words = partialTranscript.trimmed
        guard speculates, transcribes, !conversation.exceedsBudget, let speech, ending?.isPending == true, response == nil, pendingTranscripts.isEmpty,
              deferredResponse == nil, configuration.turnDetection?.createResponse ?? true, !words.isEmpty else { return }
        let heard = SpeculativeReply.words(words)
        if let outspokenWords, outspokenWords.itemID == speech.itemID, outspokenWords.words == heard { return }
        if let speculation {
            if speculation.itemID == speech.itemID, SpeculativeReply.words(speculation.transcript) == heard { return }
            dropSpeculation(.restarted)
        }
        let request = modelRequest(ResponseOverrides(), conversation.messages + [ChatMessage(role: .user, text: words)])
        let id = ids.make("resp")
        speculation = SpeculativeReply(responseID: id, itemID: speech.itemID, messages: request.messages, maxHeldBytes: historyBudget.maxBytes)
        outbox.append(.speculate(responseID: id, messages: request.messages, options: request.options))
    }

    /// The speculative call's output, held; a call that failed or ran past what may be held is dropped.
    private mutating func hold(_ input: SessionInput) {
        guard var speculation else { return }
        let fits = speculation.hold(input)
        self.speculation = speculation
        if speculation.failed {
            dropSpeculation(.failed)
        } else if !fits {
            dropSpeculation(.cancelled)
        }
    }

    /// The speculative reply will not be used: its call is stopped, and it is counted with the
    /// tokens it cost. Nothing of it was ever sent.
    private mutating func dropSpeculation(_ outcome: SpeculativeReply.Outcome) {
        guard let dropped = speculation else { return }
        speculation = nil
        if !dropped.failed { outbox.append(.cancelModel(responseID: dropped.responseID)) }
        outbox.append(.speculationEnded(responseID: dropped.responseID, outcome, tokens: dropped.tokens, answered: false))
    }

    private mutating func delta(_ id: String, _ text: String) {
        // Deltas of a response already cancelled or finished are late arrivals: dropped.
        guard response?.id == id, !text.isEmpty, let itemID = response?.itemID, let modalities = response?.modalities,
              let delivered = response?.text.utf8.count, let maxTextBytes = response?.maxTextBytes else { return }
        // Only what fits the reply's budget is delivered: a delta that crosses it is cut (on a
        // character), so what the client saw, the history and the usage all agree.
        let piece = delivered + text.utf8.count <= maxTextBytes ? text : ConversationHistory.prefix(of: text, bytes: maxTextBytes - delivered)
        if !piece.isEmpty {
            if response?.itemStarted == false {
                // The text item takes the next place in the output: first, or after calls begun before it.
                response?.itemStarted = true
                let next = response?.nextOutputIndex ?? 0
                response?.messageOutputIndex = next
                response?.nextOutputIndex = next + 1
                let outputIndex = response?.messageOutputIndex ?? 0
                let at = ContentLocation(responseID: id, itemID: itemID, outputIndex: outputIndex)
                let item = ConversationItem(id: itemID, role: .assistant, status: .inProgress, content: [])
                emit(.outputItemAdded(responseID: id, outputIndex: outputIndex, item: item))
                if response?.outOfBand == false {
                    emit(.conversationItemCreated(item, previousItemID: conversation.lastItemID))
                }
                emit(.contentPartAdded(at, part: Self.part(modalities, text: "")))
                // Its place in the conversation is taken now, empty until it ends: an item added
                // while it streams comes after it, in the history as in `previous_item_id`.
                if response?.outOfBand == false {
                    conversation.append(id: itemID, ChatMessage(role: .assistant, text: ""), audio: modalities.contains(.audio))
                }
            }
            let at = ContentLocation(responseID: id, itemID: itemID, outputIndex: response?.messageOutputIndex ?? 0)
            emit(modalities.contains(.audio) ? .outputAudioTranscriptDelta(at, delta: piece) : .outputTextDelta(at, delta: piece))
            if let r = response, r.speaks {
                outbox.append(.speech(.text(at, voice: SpeechVoice(name: r.voice, speed: r.speed), format: r.outputAudioFormat, piece)))
            }
            // Appended in place: no copy of the response is held, so the reply so far is not
            // copied on every delta.
            response?.text += piece
        }
        // Stopped once the estimated output reaches max_output_tokens, or when a delta did not
        // fit: the history's whole budget stops a runaway model, as a reply past it could never
        // be kept anyway.
        let estimated = Usage.estimatedTokens(response?.text ?? "")
        let limitReached = response?.maxOutputTokens.map { estimated >= $0 } ?? false
        if piece.utf8.count < text.utf8.count || limitReached {
            outbox.append(.cancelModel(responseID: id))
            complete(.incomplete, details: .incomplete(reason: "max_output_tokens"))
        }
    }

    // MARK: Function calls

    /// The longest arguments a call may have: as much as a client may send back as output.
    static let maxArgumentsBytes = NewConversationItem.maxFunctionTextBytes

    /// The model began a call: it becomes a `function_call` item of the response's output, and
    /// takes its place in the conversation (its arguments are filled in when the response ends).
    private mutating func toolCallStarted(_ id: String, index: Int, callID: String, name: String) {
        guard let current = response, current.id == id, !current.calls.contains(where: { $0.index == index }) else { return }
        guard current.tools?.tools.contains(where: { $0.name == name }) == true else {
            return failModel(id, "the model called '\(name)', which is not among this response's tools")
        }
        let call = Response.Call(index: index, itemID: ids.make("item"), outputIndex: current.nextOutputIndex, callID: callID, name: name)
        response?.nextOutputIndex += 1
        response?.calls.append(call)
        let item = ConversationItem(id: call.itemID, role: .assistant, status: .inProgress, content: [],
                                    function: .call(callID: callID, name: name, arguments: ""))
        emit(.outputItemAdded(responseID: id, outputIndex: call.outputIndex, item: item))
        guard !current.outOfBand else { return }
        emit(.conversationItemCreated(item, previousItemID: conversation.lastItemID))
        conversation.append(id: call.itemID, ChatMessage(role: .assistant, text: "", toolCalls: [ToolCall(id: callID, name: name, arguments: "")]))
    }

    private mutating func toolCallArguments(_ id: String, index: Int, _ delta: String) {
        guard response?.id == id, !delta.isEmpty, let position = response?.calls.firstIndex(where: { $0.index == index }),
              let call = response?.calls[position] else { return }
        guard call.arguments.utf8.count + delta.utf8.count <= Self.maxArgumentsBytes else {
            return failModel(id, "the model's arguments for '\(call.name)' passed \(Self.maxArgumentsBytes) bytes")
        }
        response?.calls[position].arguments += delta
        let at = FunctionCallLocation(responseID: id, itemID: call.itemID, outputIndex: call.outputIndex, callID: call.callID)
        emit(.functionCallArgumentsDelta(at, delta: delta))
    }

    /// The model broke the function-calling contract: its call is stopped and the response fails
    /// with the reason; the session goes on.
    private mutating func failModel(_ id: String, _ message: String) {
        outbox.append(.cancelModel(responseID: id))
        let error = EventError(type: .server, code: "invalid_tool_call", message: message)
        emit(.error(error))
        let speaks = response?.speaks == true
        finish(.failed, details: .failed(error))
        if speaks { outbox.append(.speech(.stop(responseID: id))) }
    }

    /// A call's arguments must be a JSON object when the model says it is done.
    private func malformedCall() -> Response.Call? {
        response?.calls.first { call in
            guard let parsed = try? JSON(parsing: call.arguments.isEmpty ? "{}" : call.arguments) else { return true }
            return parsed.object == nil
        }
    }

    // MARK: Items

    /// What an out-of-band response's `input` item says to the model; a reference to an item the
    /// conversation no longer holds says nothing.
    private func inputMessage(_ input: ResponseOverrides.InputItem) -> ChatMessage? {
        switch input {
        case .reference(let id): return conversation.entry(id)?.message
        case .item(let new):
            switch new.function {
            case .output(let callID, let output): return ChatMessage(role: .tool, text: output, toolCallID: callID)
            case .call(let callID, let name, let arguments):
                return ChatMessage(role: .assistant, text: "", toolCalls: [ToolCall(id: callID, name: name, arguments: arguments)])
            case nil: return ChatMessage(role: new.role, text: new.text)
            }
        }
    }

    /// `conversation.item.create`: a message, a function call's output (which must answer a call
    /// in the conversation), or a call; after `previous_item_id` when the client names one.
    private mutating func createItem(_ new: NewConversationItem, _ event: ClientEvent) {
        var position = conversation.count
        if let previous = new.previousItemID {
            guard let at = conversation.position(after: previous) else {
                emitError(.invalidRequest, "invalid_value", "'item.previous_item_id' '\(previous)' is not in the conversation", event)
                return
            }
            position = at
        }
        let id = new.id ?? ids.make("item")
        let item: ConversationItem
        let message: ChatMessage
        switch new.function {
        case .output(let callID, let output):
            guard conversation.call(callID) != nil else {
                emitError(.invalidRequest, "invalid_value",
                          "'item.call_id' '\(callID)' answers no function call in the conversation", event)
                return
            }
            item = ConversationItem(id: id, role: .tool, status: .completed, content: [], function: new.function)
            message = ChatMessage(role: .tool, text: output, toolCallID: callID)
        case .call(let callID, let name, let arguments):
            item = ConversationItem(id: id, role: .assistant, status: .completed, content: [], function: new.function)
            message = ChatMessage(role: .assistant, text: "", toolCalls: [ToolCall(id: callID, name: name, arguments: arguments)])
        case nil:
            let content: ConversationItem.Content = new.role == .assistant ? .outputText(new.text) : .inputText(new.text)
            item = ConversationItem(id: id, role: new.role, status: .completed, content: [content])
            message = ChatMessage(role: new.role, text: new.text)
        }
        let previous = position == 0 ? nil : conversation.id(at: position - 1)
        emit(.conversationItemCreated(item, previousItemID: previous))
        emit(.conversationItemDone(item, previousItemID: previous))
        conversation.insert(id: id, message, at: position)
    }

    private mutating func cancel(_ id: String, reason: String) {
        outbox.append(.cancelModel(responseID: id))
        let speaks = response?.speaks == true
        finish(.cancelled, details: .cancelled(reason: reason))
        // After response.done, so that the truncation it brings back follows it.
        if speaks { outbox.append(.speech(.stop(responseID: id))) }
    }

    /// The model is done: a spoken reply ends once its speech is out, any other at once.
    private mutating func complete(_ status: RealtimeResponse.Status, details: RealtimeResponse.StatusDetails? = nil, usage: Usage? = nil) {
        guard let current = response else { return }
        if let call = malformedCall() {
            return failModel(current.id, "the model's arguments for '\(call.name)' are not a JSON object: \(call.arguments.prefix(200))")
        }
        guard current.speaks else { return finish(status, details: details, usage: usage) }
        guard current.ending == nil else { return }
        response?.ending = .init(status: status, details: details, usage: usage)
        outbox.append(.speech(.end(responseID: current.id)))
    }

    private mutating func speechOutput(_ id: String, _ event: SpeechOutputEvent) {
        switch event {
        case .spoken(let itemID, let audioMs):
            lastSpokenReply = (itemID, audioMs)
        case .interrupted(let itemID, let playedMs, let heard):
            // The response is over by now (cancelled); the client learns where its audio stopped,
            // and the history keeps what the user heard, not the text generated ahead of the audio.
            conversation.setText(heard, of: itemID)
            emit(.conversationItemTruncated(itemID: itemID, contentIndex: 0, audioEndMs: playedMs))
        case .failed(let error):
            guard response?.id == id else { return }
            emit(.error(EventError(type: .server, code: error.code, message: "the reply could not be spoken: \(error.message)")))
        case .finished:
            guard let current = response, current.id == id, let ending = current.ending else { return }
            finish(ending.status, details: ending.details, usage: ending.usage)
        }
    }

    /// Closes the response in flight: the item's `.done` events if it has begun, then
    /// `response.done`, then the response a waiting turn is owed, if any. Whatever text was
    /// delivered is the reply's text in the history, whatever the status: it is what the user saw.
    private mutating func finish(_ status: RealtimeResponse.Status, details: RealtimeResponse.StatusDetails? = nil, usage: Usage? = nil) {
        guard let current = response else { return }
        response = nil
        lastResponseID = current.id
        if pausing != nil, let speech {
            // The reply ended (a client's cancel, a failure) while speech had paused it: with no
            // reply left to protect, the speech is the turn it would have been.
            pausing = nil
            emit(.speechStarted(audioStartMs: speech.audioStartMs, itemID: speech.itemID))
            if let words = pausingWords, transcribing == speech.itemID { partialArrived(speech.itemID, words) }
            pausingWords = nil
        }
        var output: [(index: Int, item: ConversationItem)] = []
        let itemStatus: ConversationItem.Status = status == .completed ? .completed : .incomplete
        if current.itemStarted {
            let at = ContentLocation(responseID: current.id, itemID: current.itemID, outputIndex: current.messageOutputIndex)
            // A spoken reply's audio ends here however the response ends: spoken out, cancelled or failed.
            if current.speaks { emit(.outputAudioDone(at)) }
            let part = Self.part(current.modalities, text: current.text)
            emit(current.modalities.contains(.audio) ? .outputAudioTranscriptDone(at, transcript: current.text) : .outputTextDone(at, text: current.text))
            emit(.contentPartDone(at, part: part))
            let item = ConversationItem(id: current.itemID, role: .assistant, status: itemStatus, content: [part])
            emit(.outputItemDone(responseID: current.id, outputIndex: current.messageOutputIndex, item: item))
            if !current.outOfBand { emit(.conversationItemDone(item, previousItemID: conversation.previousID(of: current.itemID))) }
            output.append((current.messageOutputIndex, item))
            if !current.outOfBand { conversation.setText(current.text, of: current.itemID) }
        }
        for var call in current.calls {
            // A call without arguments (Anthropic streams an empty input) takes none: "{}".
            if call.arguments.isEmpty { call.arguments = "{}" }
            let at = FunctionCallLocation(responseID: current.id, itemID: call.itemID, outputIndex: call.outputIndex, callID: call.callID)
            emit(.functionCallArgumentsDone(at, name: call.name, arguments: call.arguments))
            let item = ConversationItem(id: call.itemID, role: .assistant, status: itemStatus, content: [],
                                        function: .call(callID: call.callID, name: call.name, arguments: call.arguments))
            emit(.outputItemDone(responseID: current.id, outputIndex: call.outputIndex, item: item))
            if !current.outOfBand { emit(.conversationItemDone(item, previousItemID: conversation.previousID(of: call.itemID))) }
            output.append((call.outputIndex, item))
            if !current.outOfBand { conversation.setArguments(call.arguments, of: call.itemID) }
        }
        let written = current.text + current.calls.map { $0.name + $0.arguments }.joined()
        let usage = usage ?? Usage(inputTokens: current.inputTokens, outputTokens: Usage.estimatedTokens(written))
        emit(.responseDone(snapshot(current, status: status, details: details, output: output.sorted { $0.index < $1.index }.map(\.item), usage: usage)))
        if configuration.turnDetection?.idleTimeoutMs != nil { idleSinceMs = audio.totalMs }
        answerWaitingTurn()
    }

    private static func part(_ modalities: OutputModalities, text: String) -> ConversationItem.Content {
        modalities.contains(.audio) ? .outputAudio(transcript: text) : .outputText(text)
    }

    private func snapshot(_ r: Response, status: RealtimeResponse.Status, details: RealtimeResponse.StatusDetails?, output: [ConversationItem], usage: Usage?) -> RealtimeResponse {
        RealtimeResponse(id: r.id, conversationID: r.outOfBand ? nil : conversationID, status: status, statusDetails: details, output: output, usage: usage,
                         outputModalities: r.modalities, voice: r.voice, outputAudioFormat: r.outputAudioFormat, maxOutputTokens: r.maxOutputTokens,
                         metadata: r.metadata)
    }

    // MARK: Emitting

    /// An event with a fresh id, for what the caller sends itself (the reply's audio deltas).
    public mutating func event(_ kind: ServerEvent.Kind) -> ServerEvent {
        ServerEvent(eventID: ids.make("event"), kind)
    }

    private var sessionInfo: SessionInfo {
        SessionInfo(id: sessionID, model: model, configuration: configuration, transcriptionModel: transcribes ? transcriptionModel : nil)
    }

    private mutating func emit(_ kind: ServerEvent.Kind) {
        outbox.append(.send(makeEvent(kind)))
    }

    /// An event with the session's next id, for what the driver reports itself (a turn's timeline).
    public mutating func makeEvent(_ kind: ServerEvent.Kind) -> ServerEvent {
        ServerEvent(eventID: ids.make("event"), kind)
    }

    private mutating func emitError(_ type: EventError.Kind, _ code: String, _ message: String, _ event: ClientEvent) {
        emit(.error(EventError(type: type, code: code, message: message, eventID: event.eventID)))
    }

    private mutating func takeOutbox() -> [SessionAction] {
        if items.isHeld {
            let truncated = conversation.takeTruncated()
            if truncated > 0 { outbox.append(.historyTruncated(items: truncated)) }
            items.settle()
        }
        turns.settle()
        recount()
        defer { outbox = [] }
        return outbox
    }
}
