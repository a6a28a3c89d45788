import Loop

/// What a transcription reports, in order: partial hypotheses while the user speaks, then exactly
/// one of `final` or `failed`.
public enum TranscriptionEvent: Sendable, Equatable {
    /// The best guess so far; each replaces the last.
    case partial(String)
    /// The words of the whole turn up to where the speaker went quiet (`TranscriptionSession.quiet`):
    /// a partial that is the final text unless more speech comes.
    case settled(String)
    case final(String)
    case failed(ModelError)
}

/// One turn being recognised: audio goes in as it arrives, `finish` at speech_stopped.
public protocol TranscriptionSession: AnyObject {
    /// Mono samples at the rate the turn began with, the engine's audio.
    func append(_ samples: [Int16])
    /// The speaker has gone quiet: what was appended may be the whole turn. A recogniser that
    /// decodes whole utterances decodes it now and answers `settled`, and at `finish` uses that
    /// decode when nothing was appended after this but silence.
    func quiet()
    /// Whether a paused reply waits on these words: a recogniser with a queue puts the turn's
    /// decodes first while it does.
    func replyWaits(_ waits: Bool)
    /// The turn is over: produce the final text.
    func finish()
    /// The turn was cleared or the session closed; no event follows.
    func cancel()
}

/// Speech recognition. Providers are configuration shared by every loop; a session runs on the
/// loop it is given (CPU-heavy recognisers hand their work to a worker pool and report back on it).
/// The speech issue brings the providers (pocketsphinx, OpenAI-compatible transcriptions); until
/// then audio turns reach the model as their duration.
extension TranscriptionSession {
    /// A recogniser that answers in step with the audio (no queue) has nothing to reorder.
    public func replyWaits(_ waits: Bool) {}
}

public protocol Transcriber: Sendable {
    var name: String { get }
    /// Whether its sessions answer `quiet` with `settled` words (the text signal of a turn's end).
    var decodesWhenQuiet: Bool { get }
    /// A turn whose audio comes at `sampleRate` (16,000, or 8,000 from G.711): a recogniser that
    /// needs another rate converts it itself, so audio is resampled only where it must be.
    func begin(on loop: EventLoop, sampleRate: Int, _ onEvent: @escaping (TranscriptionEvent) -> Void) -> any TranscriptionSession
}

extension Transcriber {
    public var decodesWhenQuiet: Bool { false }
}

extension TranscriptionSession {
    /// A streaming recogniser's partials already cover the audio: nothing to do.
    public func quiet() {}
}
