import Models
import SpeechContracts
/// What a session engine asks its caller to do.
public enum SessionAction: Sendable, Equatable {
    /// Send this event to the client (as JSON in the client's dialect).
    case send(ServerEvent)
    /// Call the model with this conversation and stream its reply back as `.modelDelta`, then
    /// `.modelFinished` or `.modelFailed`, all with this response id.
    case startModel(responseID: String, messages: [ChatMessage], options: ModelOptions)
    /// Stop the model call for this response; anything it still delivers is ignored.
    case cancelModel(responseID: String)
    /// Call the model as `startModel` does, for a reply begun before its turn has ended
    /// (`SpeculativeReply`): its output comes back the same way and is held until the turn ends.
    case speculate(responseID: String, messages: [ChatMessage], options: ModelOptions)
    /// The speculative reply was used as the turn's response (`answered`: the model had already
    /// said something), or dropped, costing `tokens` (for the metrics; its events are sent as usual).
    case speculationEnded(responseID: String, SpeculativeReply.Outcome, tokens: Int, answered: Bool)
    /// Feed the recogniser; its results come back as `.transcription`.
    case transcription(TranscriptionStep)
    /// Speak the reply; the synthesiser's progress comes back as `.speechOutput`.
    case speech(SpeechStep)
    /// Ask the end-of-turn model (or stop asking); its answer comes back as `.turnVerdict`.
    case turnModel(TurnModelStep)
    /// List or call an MCP server's tools, or stop a call; the outcome comes back as
    /// `.mcpToolsListed` or `.mcpToolCalled` with the item's id.
    case mcp(MCPStep)
    /// A tool has been running (an MCP call, or the client's function) and the session will say
    /// a filler if it still is after `afterMs` (`ToolFiller`): the driver answers `.toolWaitElapsed`
    /// with `token`, unless `.toolWaitEnded` comes first.
    case toolWait(ToolWaitStep)
    /// Something happened that the session's observers (metrics, timing, the report, the
    /// trace) are told of; never sent as such (`SessionFact`).
    case fact(SessionFact)
}

/// What an MCP server is asked. `server` carries the entry's endpoint and credentials.
public enum MCPStep: Sendable, Equatable {
    case list(itemID: String, server: MCPServerEntry)
    case call(itemID: String, server: MCPServerEntry, tool: String, arguments: String)
    /// The call is no longer wanted (barge-in, cancel): the server is told (`notifications/cancelled`).
    case cancel(itemID: String)
}

/// The filler's timer (`ToolFiller`).
public enum ToolWaitStep: Sendable, Equatable {
    case arm(token: Int, afterMs: Int)
    case disarm
}

/// What the end-of-turn model is asked (see `TurnEnding`).
public enum TurnModelStep: Sendable, Equatable {
    /// Is the turn complete? Asked by the item: its audio is the engine's (`turnModelAudio`), or
    /// the recogniser's stream of the same turn where the model runs, never copied into the step.
    case judge(itemID: String)
    /// The user went on, or the turn was cleared: the answer is no longer wanted.
    case cancel(itemID: String)
}

/// What the synthesiser is asked to do for a spoken reply.
public enum SpeechStep: Sendable, Equatable {
    /// A piece of the reply's text, as the model streamed it, to be spoken in order.
    case text(ContentLocation, voice: SpeechVoice, format: RealtimeAudioFormat, String)
    /// A speculative reply (`SessionAction.speculate`) begins with this piece: make its sound now,
    /// held unheard, for the reply's first sentence if the reply is used (`PreparedSpeech`);
    /// dropped with the speculation (`speculationEnded` other than `used`).
    case prepare(responseID: String, voice: SpeechVoice, String)
    /// The reply's text is complete: speak what is left, send it, then report `.finished`.
    case end(responseID: String)
    /// The reply was cancelled: stop speaking now and report how much the client had played.
    case stop(responseID: String)
    /// The user began speaking over the reply: send no more of its audio until `resume` (or
    /// `stop`); synthesis and the response go on.
    case pause(responseID: String)
    /// The speech that paused the reply was not a barge-in: send the rest from where it paused.
    case resume(responseID: String, ReplyInterruption.Resumption)
}

/// What becomes of a spoken reply.
public enum SpeechOutputEvent: Sendable, Equatable {
    /// The reply's audio, whole: how long it lasts (just before `finished`), so that a client's
    /// `conversation.item.truncate` can be mapped onto its transcript.
    case spoken(itemID: String, audioMs: Int)
    /// The reply's first audio went to the listener.
    case audible
    /// Every sentence was spoken and sent.
    case finished
    /// Stopped (barge-in, cancel) after the client had had time to play `playedMs` of it, which
    /// said `heard` (the words of the sentences played, the last in proportion).
    case interrupted(itemID: String, playedMs: Int, heard: String)
    /// Synthesis failed; the reply goes on as text.
    case failed(ModelError)
}

/// What the recogniser is asked to do for a spoken turn. A turn's audio streams in while the user
/// speaks (`begin` with the audio since the speech began, then `audio` for each piece), so the
/// final text can come soon after speech stops.
public enum TranscriptionStep: Sendable, Equatable {
    /// Mono samples of the turn so far, at `sampleRate` (the session's: 16 kHz, or 8 kHz for
    /// G.711 input), as is every `audio` after it; heard as the session chose
    /// (`audio.input.transcription`'s model and language).
    case begin(itemID: String, audio: [Int16], sampleRate: Int, choice: TranscriptionChoice)
    /// More of the turn `itemID`'s audio.
    case audio(itemID: String, [Int16])
    /// The speaker has gone quiet (`SessionEngine.quietMs` after their last speech): what the
    /// turn holds may be all of it, so a recogniser that can decode it now does, and that decode
    /// is the final text if only silence follows (`TranscriptionEvent.settled`).
    case quiet(itemID: String)
    /// The speaker spoke again after the last `quiet`: that decode no longer ends the turn.
    case spokeAgain(itemID: String)
    /// Whether a reply is paused on the turn's words (speech over it that may be a barge-in or a
    /// backchannel: `TurnTaking.pauseWordsWaitMs` to tell, or the reply resumes): its decodes go
    /// ahead of every other turn's until the speech is confirmed as a turn.
    case replyWaits(itemID: String, Bool)
    /// The turn is over: produce the final text.
    case finish(itemID: String)
    /// The turn's audio was cleared: no text is wanted.
    case cancel(itemID: String)
}

/// The per-response settings a model call needs besides the messages.
public struct ModelOptions: Sendable, Equatable {
    /// nil: no limit beyond the model's own.
    public var maxOutputTokens: Int?
    public var outputModalities: OutputModalities
    public var voice: String
    public var outputAudioFormat: RealtimeAudioFormat
    /// The functions the model may call for this response, and whether it must.
    public var tools: ToolSet?
    public var toolChoice: ToolChoice
    /// The user's language, set or found (`SessionConfiguration.language`); nil: English or not known.
    public var language: String?

    public init(maxOutputTokens: Int? = nil, outputModalities: OutputModalities = .text, voice: String = "alloy", outputAudioFormat: RealtimeAudioFormat = .pcm16,
                tools: ToolSet? = nil, toolChoice: ToolChoice = .auto) {
        self.maxOutputTokens = maxOutputTokens
        self.outputModalities = outputModalities
        self.voice = voice
        self.outputAudioFormat = outputAudioFormat
        self.tools = tools
        self.toolChoice = toolChoice
    }
}
