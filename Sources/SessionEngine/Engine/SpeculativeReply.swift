import Models

/// A reply begun before the turn is known to be over (`turn_detection.speculative_response`):
/// when the end-of-turn model is first asked about a silence, the model starts on the transcript
/// so far, so that its first words are ready when the turn ends. Everything it says is held here,
/// unseen and unheard, until the engine either makes it the turn's response (the final transcript
/// says what the speculation read) or drops it (the user went on, the words differ, the session
/// changed); a dropped one is a wasted call, counted with its tokens.
///
/// A value, as the rest of the engine is: the rule that decides whether it may stand is
/// `answers(_:)`, a unit test.
public struct SpeculativeReply: Sendable, Equatable {
    /// What became of it, the label of `parley_speculative_replies_total`.
    public enum Outcome: String, Sendable, CaseIterable {
        /// The final transcript matched: it became the turn's response.
        case used
        /// The final transcript (or the session) differed: a new response was started.
        case restarted
        /// The user went on speaking, or the turn was cleared or committed by hand.
        case cancelled
        /// The model call failed; the turn's response starts afresh.
        case failed
    }

    package let responseID: String
    /// The request as sent, instructions first and the user's words so far last.
    package let messages: [ChatMessage]
    /// The turn it answers.
    package let itemID: String
    /// The model's output so far, in order, to be replayed through the engine if it is used.
    private(set) var held: [SessionInput] = []
    /// Text held (deltas and arguments), against `maxHeldBytes`.
    private(set) var heldBytes = 0
    /// The usage the model reported when it finished, if it did.
    private(set) var usage: Usage?
    /// The call has ended: finished (its output is all in `held`) or failed.
    private(set) var failed = false
    /// The text it has said so far (its deltas joined), kept only until its first piece of speech
    /// is asked for: the one reader (`SessionEngine.prepareSpeech`) then has what it needs, and the
    /// reply's text is in `held` already.
    private(set) var text = ""
    /// Its first piece of speech was asked for ahead (`SpeechStep.prepare`), once.
    package var speechPrepared = false
    /// It reads the turn's settled words (a whole decode up to its quiet), not a partial's guess:
    /// only then is its first piece of speech made ahead.
    package var onSettledWords = false

    /// The most text held for one speculation: the history's whole text budget, which no reply
    /// could outgrow anyway. A model that runs past it is stopped and the speculation dropped.
    package let maxHeldBytes: Int

    package init(responseID: String, itemID: String, messages: [ChatMessage], maxHeldBytes: Int, onSettledWords: Bool = false) {
        self.onSettledWords = onSettledWords
        self.responseID = responseID
        self.itemID = itemID
        self.messages = messages
        self.maxHeldBytes = maxHeldBytes
    }

    /// The words the speculation was started on.
    package var transcript: String { messages.last?.text ?? "" }

    /// Whether `input` is the speculative call's output (and so held rather than handled).
    package func owns(_ input: SessionInput) -> Bool {
        switch input {
        case .modelDelta(let id, _), .modelToolCallStarted(let id, _, _, _), .modelToolCallArguments(let id, _, _),
             .modelFinished(let id, _, _), .modelFailed(let id, _, _):
            return id == responseID
        default:
            return false
        }
    }

    /// Holds the call's output. False when it no longer fits (`maxHeldBytes`): drop it.
    package mutating func hold(_ input: SessionInput) -> Bool {
        switch input {
        case .modelDelta(_, let delta):
            heldBytes += delta.utf8.count
            if !speechPrepared { text += delta }
        case .modelToolCallArguments(_, _, let delta): heldBytes += delta.utf8.count
        case .modelFinished(_, let reported, _): usage = reported
        case .modelFailed:
            failed = true
            return true
        default: break
        }
        guard heldBytes <= maxHeldBytes else { return false }
        held.append(input)
        return true
    }

    /// Whether a response to `request` (the messages it would send) may be this one: the same
    /// conversation, and the user's last words the same but for case, punctuation and spacing
    /// (Whisper's final pass over the same audio may punctuate it differently).
    package func answers(_ request: [ChatMessage]) -> Bool {
        guard !failed, request.count == messages.count, let last = request.last, let mine = messages.last,
              last.role == .user, mine.role == .user, request.dropLast() == messages.dropLast() else { return false }
        return Self.words(last.text) == Self.words(mine.text)
    }

    /// The words of `text`, lowercased, without punctuation.
    package static func words(_ text: String) -> [Substring] {
        text.lowercased().split { !($0.isLetter || $0.isNumber || $0 == "'") }
    }

    /// Tokens spent for nothing if it is dropped: the request, and what the model wrote (as it
    /// reported them, or estimated as `Usage` does).
    package var tokens: Int {
        if let usage { return usage.totalTokens }
        var written = 0
        for input in held {
            switch input {
            case .modelDelta(_, let text): written += text.utf8.count
            case .modelToolCallStarted(_, _, _, let name): written += name.utf8.count
            case .modelToolCallArguments(_, _, let delta): written += delta.utf8.count
            default: break
            }
        }
        return Usage.estimatedInputTokens(messages) + Usage.estimatedTokens(bytes: written)
    }

    /// The model said all it will (its output is all in `held`, its finish last).
    package var finished: Bool {
        if case .modelFinished? = held.last { true } else { false }
    }

    /// Whether the model began a call to a tool.
    package var callsTool: Bool {
        held.contains { if case .modelToolCallStarted = $0 { true } else { false } }
    }

    /// Whether the model had said anything yet (the turn's first token came before its end).
    package var hasOutput: Bool {
        held.contains { if case .modelDelta = $0 { true } else if case .modelToolCallStarted = $0 { true } else { false } }
    }
}
