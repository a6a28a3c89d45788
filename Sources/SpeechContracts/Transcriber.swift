import Models
import Loop

/// What a transcription reports, in order: partial hypotheses while the user speaks, then exactly
/// one of `final` or `failed`.
public enum TranscriptionEvent: Sendable, Equatable {
    /// The best guess so far; each replaces the last; with the recogniser's confidence in it,
    /// where it gives one.
    case partial(String, DecodeConfidence? = nil)
    /// The words of the whole turn up to where the speaker went quiet (`TranscriptionSession.quiet`):
    /// a partial that is the final text unless more speech comes.
    case settled(String, DecodeConfidence? = nil)
    case final(String)
    /// The language the recogniser found the turn in (ISO-639-1), before its `final`: given only
    /// by one asked to find it (`TranscriptionChoice.language` nil, Whisper base), and only when
    /// it is sure enough (`WhisperTranscriber.languageProbability`).
    case language(String)
    case failed(ModelError)
}

/// One turn being recognised: audio goes in as it arrives, `finish` at speech_stopped.
public protocol TranscriptionSession: AnyObject {
    /// Mono samples at the rate the turn began with, the engine's audio.
    func append(_ samples: [Int16])
    /// The speaker has gone quiet: what was appended may be the whole turn. A recogniser answers
    /// `settled` once its words cover everything appended so far (`Transcriber.settledWords`
    /// says which words those are); one that decodes whole utterances uses that decode at
    /// `finish` when nothing was appended after this but silence.
    func quiet()
    /// The speaker spoke again after the last `quiet`: its decode no longer ends the turn, and a
    /// recogniser with a queue need not make it if it has not begun.
    func spokeAgain()
    /// Whether a paused reply waits on these words: a recogniser with a queue puts the turn's
    /// decodes first while it does.
    func replyWaits(_ waits: Bool)
    /// The turn is over: produce the final text.
    func finish()
    /// The turn was cleared or the session closed; no event follows.
    func cancel()
    /// Where the audio appended so far is held for other models to read, if anywhere (the speech
    /// helper's stream of the turn): the end-of-turn model is asked about the turn by this name.
    var heldAudio: HeldAudio? { get }
}

/// Speech recognition. Providers are configuration shared by every loop; a session runs on the
/// loop it is given (CPU-heavy recognisers hand their work to a worker pool and report back on it).
/// The speech issue brings the providers (pocketsphinx, OpenAI-compatible transcriptions); until
/// then audio turns reach the model as their duration.
extension TranscriptionSession {
    /// A recogniser that answers in step with the audio (no queue) has nothing to reorder.
    public func replyWaits(_ waits: Bool) {}
    public func spokeAgain() {}
    public var heldAudio: HeldAudio? { nil }
}

/// What a recogniser's sessions answer `quiet` with (`TranscriptionEvent.settled`).
public enum SettledWords: Sendable, Equatable {
    /// Nothing: its words come at `finish` (a recogniser that uploads the whole turn).
    case none
    /// Its streaming hypothesis once it has heard all the audio so far (pocketsphinx): a guess,
    /// often another word than was said ("stop" heard as "i"), but a guess of all of it. A paused
    /// reply waits for it: a partial that was merely late (a recogniser behind a busy CPU) is
    /// not taken for no words.
    case hypothesis
    /// A whole decode of the turn up to the quiet (Whisper): the text signal of a turn's end.
    case decode
}

public protocol Transcriber: Sendable {
    var name: String { get }
    /// What its sessions answer `quiet` with.
    var settledWords: SettledWords { get }
    /// The model a session's choice is heard by (`session.created`'s `transcription.model`): one
    /// this recogniser offers, or its default.
    func model(for choice: TranscriptionChoice) -> String
    /// A turn whose audio comes at `sampleRate` (16,000, or 8,000 from G.711): a recogniser that
    /// needs another rate converts it itself, so audio is resampled only where it must be.
    func begin(on loop: EventLoop, sampleRate: Int, choice: TranscriptionChoice, _ onEvent: @escaping (TranscriptionEvent) -> Void) -> any TranscriptionSession
}

extension Transcriber {
    public var settledWords: SettledWords { .none }
    /// A recogniser of one model hears every choice with it.
    public func model(for choice: TranscriptionChoice) -> String { name }
}

/// What a session asks of the recogniser: the Realtime API's `audio.input.transcription` `model`
/// and `language`. A model the server does not offer (an SDK's default such as
/// `gpt-4o-transcribe`) is heard by the server's own, as `session.created` then says.
public struct TranscriptionChoice: Sendable, Equatable {
    /// A model by name; nil: the server's.
    public var model: String?
    /// ISO-639-1 (`en`, `es`, ...); nil: the recogniser finds it, or hears the one it knows.
    public var language: String?

    public init(model: String? = nil, language: String? = nil) {
        self.model = model
        self.language = language
    }

    /// The longest model name taken: the API's are under 30 bytes.
    public static let maxModelBytes = 64

    /// Whether `code` has the shape of an ISO-639-1 code (two lowercase letters; Whisper's
    /// three-letter `haw` and `yue` too): which languages a recogniser knows is its own to say.
    public static func isLanguageCode(_ code: String) -> Bool {
        (2...3).contains(code.utf8.count) && code.utf8.allSatisfy { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) }
    }
}

extension TranscriptionSession {
    /// A recogniser whose words come only at `finish` has nothing to say at a quiet.
    public func quiet() {}
}
