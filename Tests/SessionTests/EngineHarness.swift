import Codec
@testable import Models
import Server
@testable import Session
@testable import SessionEngine

/// Drives a session engine as a connection will: client JSON text in (appends checked against the
/// session's input format, decoded by the connection's `AudioInput`: pcm16 resampled from 24 to
/// 16 kHz, G.711 kept at 8 kHz, and handed over as audio), actions out.
struct EngineHarness {
    var engine: SessionEngine
    private let input = AudioInput()

    init(seed: UInt64 = 1, options: SessionEngine.Options = .init()) throws {
        engine = SessionEngine(seed: seed, options: options)
    }

    /// A harness whose session has manual turns (turn_detection null).
    static func manual(options: SessionEngine.Options = .init()) throws -> EngineHarness {
        var options = options
        options.configuration.turnDetection = nil
        return try EngineHarness(options: options)
    }

    mutating func start() -> [SessionAction] { engine.start() }

    mutating func client(_ text: String) -> [SessionAction] {
        do {
            switch try ClientMessage.parse(text) {
            case .audioAppend(let eventID, let bytes):
                if var refusal = engine.configuration.refusal(of: .append(bytes: bytes.count), allowsOpus: engine.allowsOpus) {
                    refusal.eventID = eventID
                    return engine.handle(.invalidClientEvent(refusal))
                }
                // Only making pcm16's resampler can throw, and 24 to 16 kHz is always made.
                return engine.handle(.audio(try! input.appended(bytes, as: engine.configuration.inputAudioFormat)))
            case .event(let event):
                return engine.handle(.client(event))
            }
        } catch {
            return engine.handle(.invalidClientEvent(error))
        }
    }

    mutating func audio(_ samples: [Int16]) -> [SessionAction] { engine.handle(.audio(samples)) }

    mutating func audio(_ chunks: [[Int16]]) -> [SessionAction] { chunks.flatMap { engine.handle(.audio($0)) } }

    mutating func say(_ text: String) -> [SessionAction] {
        client(#"{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_text","text":"\#(text)"}]}}"#)
    }

    /// Starts a response and returns its id.
    mutating func respond() throws -> String {
        try client(#"{"type":"response.create"}"#).model().id
    }

    mutating func delta(_ id: String, _ text: String) -> [SessionAction] { engine.handle(.modelDelta(responseID: id, text: text)) }

    mutating func finish(_ id: String, usage: Usage? = nil, reason: FinishReason = .stop) -> [SessionAction] {
        engine.handle(.modelFinished(responseID: id, usage: usage, reason: reason))
    }
}

struct HarnessFailure: Error, CustomStringConvertible {
    let description: String
}

extension [SessionAction] {
    /// The events sent, without GA's `conversation.item.done` (see `types`).
    var events: [ServerEvent] { compactMap { if case .send(let event) = $0, !event.isConversationItemDone { event } else { nil } } }
    var itemsDone: [ConversationItem] { compactMap { if case .send(let event) = $0, case .conversationItemDone(let item, _) = event.kind { item } else { nil } } }

    /// Event types and, in their places, `startModel` and `cancelModel`. GA names, but for item
    /// creation, written by its beta name (`conversation.item.created`) as it was before GA's
    /// `added`, and without GA's `conversation.item.done` (`itemsDone` lists those; the dialects'
    /// names are tested in ServerEventJSONTests and SessionEngineItemEventTests).
    var types: [String] {
        compactMap { action in
            switch action {
            case .send(let event) where event.isConversationItemDone: nil
            case .send(let event): event.type(in: .beta) == "conversation.item.created" ? "conversation.item.created" : event.type(in: .ga)
            case .startModel: "startModel"
            case .cancelModel: "cancelModel"
            case .speculate: "speculate"
            case .transcription(.begin): "transcribe.begin"
            case .transcription(.audio): "transcribe.audio"
            case .transcription(.finish): "transcribe.finish"
            // Sent once per silence within a turn (and once per speech after one): left out here
            // so that the lists read as the turn's story; TurnWordsEngineTests checks them.
            case .transcription(.quiet), .transcription(.spokeAgain): nil
            case .transcription(.replyWaits(_, true)): "transcribe.replyWaits"
            case .transcription(.replyWaits(_, false)): "transcribe.replyDecided"
            case .transcription(.cancel): "transcribe.cancel"
            case .speech(.text): "speak.text"
            case .speech(.prepare): "speak.prepare"
            case .speech(.end): "speak.end"
            case .speech(.stop): "speak.stop"
            case .speech(.pause): "speak.pause"
            case .speech(.resume(_, .backchannel)): "speak.resume.backchannel"
            case .speech(.resume(_, .short)): "speak.resume.short"
            case .turnModel(.judge): "turn.judge"
            case .turnModel(.cancel): "turn.cancel"
            case .mcp(.list): "mcp.list"
            case .mcp(.call): "mcp.call"
            case .mcp(.cancel): "mcp.cancel"
            case .toolWait(.arm): "toolWait.arm"
            case .toolWait(.disarm): "toolWait.disarm"
            // What observers are told, listed by `facts` and `turnEnds`; bookkeeping for metrics.
            case .fact, .speculationEnded: nil
            }
        }
    }

    /// The model call these actions start; a test failure if they start none.
    func model() throws -> (id: String, messages: [ChatMessage], options: ModelOptions) {
        for case .startModel(let id, let messages, let options) in self { return (id, messages, options) }
        throw HarnessFailure(description: "no model call started; got \(types)")
    }

    /// The speculative reply these actions start; a test failure if they start none.
    func speculation() throws -> (id: String, messages: [ChatMessage]) {
        for case .speculate(let id, let messages, _) in self { return (id, messages) }
        throw HarnessFailure(description: "no speculative reply started; got \(types)")
    }

    /// What became of each speculative reply these actions end.
    var speculationOutcomes: [SpeculativeReply.Outcome] { compactMap { if case .speculationEnded(_, let outcome, _, _) = $0 { outcome } else { nil } } }

    /// Why each turn these actions end ended.
    var turnEnds: [TurnEnding.Cause] { compactMap { if case .fact(.turnEnded(_, _, let cause)) = $0 { cause } else { nil } } }

    /// The facts these actions tell observers, in order.
    var facts: [SessionFact] { compactMap { if case .fact(let fact) = $0 { fact } else { nil } } }

    var errors: [EventError] { events.compactMap { if case .error(let error) = $0.kind { error } else { nil } } }

    var responseDone: RealtimeResponse? {
        for event in events { if case .responseDone(let response) = event.kind { return response } }
        return nil
    }
}

extension ServerEvent {
    var isConversationItemDone: Bool { if case .conversationItemDone = kind { true } else { false } }
}

extension SessionEngine {
    /// A `semantic_vad` session hearing with the scripted neural VAD (loud is speech), with an
    /// end-of-turn model to ask; `adjust` changes its options first.
    static func semantic(eagerness: ServerVAD.Eagerness = .auto, createResponse: Bool = false, seed: UInt64 = 9,
                         _ adjust: (inout SessionEngine.Options) -> Void = { _ in }) -> SessionEngine {
        var options = SessionEngine.Options()
        options.voiceActivityModel = ScriptedVoiceActivityModel()
        options.judgesTurns = true
        var vad = ServerVAD(threshold: 0.5, prefixPaddingMs: 0, silenceDurationMs: 500, createResponse: createResponse)
        vad.semanticEagerness = eagerness
        options.configuration.turnDetection = vad
        adjust(&options)
        var engine = SessionEngine(seed: seed, options: options)
        _ = engine.start()
        return engine
    }

    /// `loudMs` of speech, then `silentMs` of silence, at 16 kHz in 20 ms pieces.
    mutating func feed(silentMs: Int = 0, loudMs: Int = 0) -> [SessionAction] {
        let samples = [Int16](repeating: 8000, count: loudMs * 16) + [Int16](repeating: 0, count: silentMs * 16)
        var actions: [SessionAction] = []
        for start in stride(from: 0, to: samples.count, by: 320) {
            actions += handle(.audio(Array(samples[start..<min(samples.count, start + 320)])))
        }
        return actions
    }
}
