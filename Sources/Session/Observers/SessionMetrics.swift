import Metrics
import SessionEngine

/// The session layer's series in /metrics, process-wide: every loop adds to the same relaxed
/// atomics, and a scrape reads them. Declared in `MetricsRegistry.process`; a test's own instance
/// declares them in a registry of its own.
public final class SessionMetrics: Sendable {
    public static let shared = SessionMetrics(registry: .process)

    /// Where its series are declared.
    let registry: MetricsRegistry

    let sessionsOpen: MetricFamily
    let turns: MetricFamily
    let responses: LabelledFamily<ResponseStatusLabel>
    let speechToResponse: Histogram

    let audioFrames: LabelledFamily<AudioFrameResult>
    let audioLag: Histogram

    let limitCloses: LabelledFamily<LimitClose>
    let toolCalls: LabelledFamily<ToolCallStatus>
    let toolTime: Histogram

    let sessionsDetached: MetricFamily
    let resumes: LabelledFamily<ResumeResult>
    let resumeSeconds: Histogram
    let expired: MetricFamily
    let storeWaitsGivenUp: MetricFamily

    let interruptions: MetricFamily
    let backchannels: MetricFamily
    let noisyPhoneLines: MetricFamily
    let repliesPaused: MetricFamily
    let turnsReopened: MetricFamily
    let repliesResumed: LabelledFamily<ReplyInterruption.Resumption>
    let prematureTurnEnds: MetricFamily
    let turnEnds: LabelledFamily<TurnEnding.Cause>
    let turnModelTime: Histogram
    let turnModelFailures: LabelledFamily<TurnModelFailure>
    /// One histogram a stage of `TurnTimeline`, by its name, all of one family.
    let turnStages: [String: Histogram]
    let echoFrames: LabelledFamily<EchoFrameResult>
    let speculativeReplies: LabelledFamily<SpeculativeReply.Outcome>
    let speculativeTokensWasted: MetricFamily
    let preparedSpeech: LabelledFamily<PreparedSpeech.Outcome>
    let historyTruncated: MetricFamily

    init(registry: MetricsRegistry = MetricsRegistry()) {
        self.registry = registry
        sessionsOpen = MetricFamily(name: "parley_sessions_open", help: "Realtime sessions open (/v1/realtime and /ws).", kind: .gauge, registry: registry)
        turns = MetricFamily(name: "parley_session_turns_total", help: "Responses started (turns).", registry: registry)
        responses = LabelledFamily(name: "parley_session_responses_total", help: "Responses finished, by status.", registry: registry)
        speechToResponse = Histogram(name: "parley_speech_stopped_to_response_created_seconds",
                                     help: "From speech_stopped to response.created (transcription and turn-taking).",
                                     bounds: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5], registry: registry)
        audioFrames = LabelledFamily(name: "parley_audio_input_frames_total", help: "Audio frames (Opus packets, or pcm16 appends) received, by outcome.", registry: registry)
        audioLag = Histogram(name: "parley_audio_input_lag_seconds",
                             help: "How far behind real time each audio frame was when its processing (decode, resampling, VAD, turn-taking) ended, by the stream's own clock; meaningful for clients that stream at real-time pace.",
                             bounds: [0.0001, 0.00025, 0.0005, 0.001, 0.0015, 0.002, 0.003, 0.004, 0.005, 0.0075, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 2.5, 10], registry: registry)
        limitCloses = LabelledFamily(name: "parley_session_limit_closes_total", help: "Sessions closed (1008) for passing a limit, by which.", registry: registry)
        toolCalls = LabelledFamily(name: "parley_tool_calls_total", help: "Function calls the model made, by how their response ended.", registry: registry)
        toolTime = Histogram(name: "parley_tool_client_seconds",
                             help: "From a function call's arguments being done to the client's function_call_output for it: the client's tool time.",
                             bounds: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60], registry: registry)
        sessionsDetached = MetricFamily(name: "parley_sessions_detached", help: "Resumable sessions whose client is gone, within their grace window.", kind: .gauge, registry: registry)
        resumes = LabelledFamily(name: "parley_sessions_resumed_total", help: "Reconnects with a resume token, by outcome: resumed here (memory), restored from the store, refused, taken (another node resumed it first), or told to retry (the store could not answer).", registry: registry)
        resumeSeconds = Histogram(name: "parley_resume_gap_seconds", help: "From a resumable session's client going to its resume.",
                                  bounds: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30], registry: registry)
        interruptions = MetricFamily(name: "parley_interruptions_total",
                                     help: "Replies cut by the user's speech (barge-ins): responses cancelled with reason turn_detected.", registry: registry)
        noisyPhoneLines = MetricFamily(name: "parley_phone_lines_denoised_total",
                                       help: "Phone calls (SIP, /twilio) whose line was found noisy and denoised from then on (--phone-line-denoise auto).", registry: registry)
        backchannels = MetricFamily(name: "parley_backchannels_ignored_total",
                                    help: "Speech during a spoken reply whose words were all backchannels (uh-huh, okay): the reply resumed.", registry: registry)
        repliesPaused = MetricFamily(name: "parley_replies_paused_total", help: "Spoken replies paused by user speech, before it was known to be a barge-in.",
                                     registry: registry)
        turnsReopened = MetricFamily(name: "parley_turns_reopened_total",
                                     help: "Turns that went on after they had ended, before their reply was heard: the reply withdrawn, the two halves one item.",
                                     registry: registry)
        repliesResumed = LabelledFamily(name: "parley_replies_resumed_total",
                                      help: "Paused replies resumed, by why: the speech was only backchannels, or ended short (a noise, a short sound).", registry: registry)
        prematureTurnEnds = MetricFamily(name: "parley_turn_premature_ends_total",
                                         help: "Turns that server VAD ended although the user went on speaking within 1 s of the end (a pause taken for the end of a turn).",
                                         registry: registry)
        turnEnds = LabelledFamily(name: "parley_turn_ends_total",
                                help: "Turns server VAD ended, by what ended them: the end-of-turn model (semantic_vad, the words agreeing when read), the words alone past a pause (finished words the model did not confirm, or digits read out), the longest wait when nothing said finished, or silence alone.", registry: registry)
        turnModelTime = Histogram(name: "parley_turn_model_seconds", help: "The end-of-turn model's decisions, from asking to the answer on the session's loop.",
                                  bounds: [0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.25, 0.5], registry: registry)
        turnModelFailures = LabelledFamily(name: "parley_turn_model_failures_total",
                                         help: "End-of-turn questions unanswered, by why (the helper down or starting, or past the deadline): those turns ended by silence.", registry: registry)
        turnStages = Dictionary(uniqueKeysWithValues: TurnTimeline.names.map { stage in
            (stage, Histogram(name: "parley_turn_stage_seconds",
                              help: "Where a turn's time goes, stage by stage, from the user's last word to the reply's first audio frame written (to its first token for a text reply): end_of_turn, transcription, model_request, first_token, first_sentence, synthesis, first_frame, and the total.",
                              bounds: [0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.75, 1, 1.5, 2, 3, 5], label: TurnStageLabel(labelValue: stage), registry: registry))
        })
        echoFrames = LabelledFamily(name: "parley_echo_guard_frames_total",
                                  help: "10 ms input frames of echo-guarded sessions during a reply: run through the echo canceller, and held by the gate as the reply's own echo (not speech).", registry: registry)
        speculativeReplies = LabelledFamily(name: "parley_speculative_replies_total",
                                          help: "Replies begun on the words so far while the end-of-turn model weighed a silence, by what became of them: used as the turn's response, restarted (the final words or the session differed), cancelled (the user went on, or the turn was cleared), failed.", registry: registry)
        preparedSpeech = LabelledFamily(name: "parley_prepared_speech_total",
                                        help: "Speculative replies' first pieces of speech made before their turn ended (on the turn's settled words), by what became of them: used as the reply's first sound, or dropped unheard.", registry: registry)
        historyTruncated = MetricFamily(name: "parley_conversation_items_truncated_total",
                                        help: "Conversation items dropped from sessions' histories by truncation (the budget of --max-history-bytes, the model's context, session.truncation).",
                                        registry: registry)
        speculativeTokensWasted = MetricFamily(name: "parley_speculative_tokens_wasted_total",
                                               help: "Tokens (in and out, as the model reported them or estimated) of speculative replies that were not used.", registry: registry)
        expired = MetricFamily(name: "parley_sessions_expired_total", help: "Resumable sessions ended because their client did not come back within the grace window.", registry: registry)
        storeWaitsGivenUp = MetricFamily(name: "parley_resume_store_waits_given_up_total",
                                         help: "Times a resumable session stopped waiting for the store to keep a completed item and told its client anyway (--resume-store-wait-seconds).",
                                         registry: registry)
    }

    /// Its series alone, as a scrape shows them.
    public func render() -> String { registry.render() }

    /// Counts what a fact says about turns, replies and responses.
    func observe(_ fact: SessionFact) {
        switch fact {
        case .responseBegan: turns.add(1)
        case .responseEnded(let response):
            if let status = ResponseStatusLabel(rawValue: response.status.rawValue) { responses.add(1, status) }
            for item in response.output {
                guard case .call = item.function else { continue }
                toolCalls.add(1, item.status == .completed ? .completed : .incomplete)
            }
        case .bargedIn: interruptions.add(1)
        case .replyPaused: repliesPaused.add(1)
        case .turnReopened: turnsReopened.add(1)
        case .replyResumed(_, let why):
            repliesResumed.add(1, why)
            if why == .backchannel { backchannels.add(1) }
        case .turnEnded(_, _, let cause): turnEnds.add(1, cause)
        case .historyTruncated(let items): historyTruncated.add(items)
        case .fillerSaid: ToolMetrics.shared.fillers.add(1)
        default: break
        }
    }
}

// MARK: The session's labels

/// How a response ended (`status`): a finished one's status, never `in_progress`.
enum ResponseStatusLabel: String, MetricLabel, CaseIterable {
    case completed, cancelled, failed, incomplete
    static let labelName = "status"
}

/// What became of an audio frame (`result`).
enum AudioFrameResult: String, MetricLabel, CaseIterable {
    case processed, rejected
    static let labelName = "result"
}

/// The limit a session passed (`reason`): a `SessionBudget` limit, or its length.
enum LimitClose: String, MetricLabel, CaseIterable {
    case events, audio, duration, tokens
    static let labelName = "reason"

    init(_ limit: SessionBudget.Exceeded) {
        switch limit {
        case .events: self = .events
        case .audio: self = .audio
        case .tokens: self = .tokens
        }
    }
}

/// How a function call's response ended (`status`).
enum ToolCallStatus: String, MetricLabel, CaseIterable {
    case completed, incomplete
    static let labelName = "status"
}

/// What a reconnect with a resume token got (`result`).
enum ResumeResult: String, MetricLabel, CaseIterable {
    case memory, store, refused, taken
    case outOfRange = "out_of_range"
    case retry
    static let labelName = "result"
}

/// Why an end-of-turn question went unanswered (`reason`).
enum TurnModelFailure: String, MetricLabel, CaseIterable {
    case unavailable, timeout
    static let labelName = "reason"
}

/// What the echo guard did with a 10 ms frame (`result`).
enum EchoFrameResult: String, MetricLabel, CaseIterable {
    case cancelled, held
    static let labelName = "result"
}

/// A stage of a turn's timeline (`stage`), one histogram each.
struct TurnStageLabel: MetricLabel {
    static let labelName = "stage"
    let labelValue: String
}

// The engine's own vocabularies, labelled here: Engine may not import Metrics.

extension TurnEnding.Cause: MetricLabel {
    public static let labelName = "cause"
}

extension SpeculativeReply.Outcome: MetricLabel {
    public static let labelName = "outcome"
}

extension PreparedSpeech.Outcome: MetricLabel {
    static let labelName = "outcome"
}

extension ReplyInterruption.Resumption: MetricLabel, CaseIterable {
    public static let labelName = "reason"
    public static let allCases: [Self] = [.backchannel, .short]
    public var labelValue: String {
        switch self {
        case .backchannel: "backchannel"
        case .short: "short"
        }
    }
}
