import Codec
import Models
import Synchronization
import Loop
#if canImport(Glibc)
import Glibc
import SpeechContracts
#endif

/// The embedded recogniser: pocketsphinx with Debian's en-us model, streaming while the user
/// speaks. Decoders are loaded once and lent to one turn at a time; the recognition itself runs on
/// the speech worker pool, never on an event loop.
///
/// A turn keeps at most one job in flight: audio that arrives meanwhile waits on the loop and goes
/// with the next job, so a slow moment batches up instead of queueing many small jobs, and the
/// decoder is only ever used by one thread at a time. Each job ends with the best hypothesis so far
/// (a partial); the last ends the utterance (the final text). At a quiet the next job takes
/// whatever audio has come, however little, and its hypothesis is `settled`: the guess of all of
/// the speech so far, which a paused reply waits for rather than reading a late partial as none.
///
/// When every decoder is lent, or the pool's queue is full, the turn fails with `overloaded` at
/// once: the session tells its client, and no other session waits.
///
/// The model hears 16 kHz. A turn at another rate (8 kHz from G.711) is resampled to it inside its
/// jobs, by one resampler per turn: once, where recognition needs it, and on the workers rather
/// than the loop.
public final class SphinxTranscriber: Transcriber {
    public let name = "pocketsphinx"
    public let settledWords = SettledWords.hypothesis
    let pool: WorkerPool
    let model: SphinxDecoder.Model
    /// Decoders loaded and not lent, and how many turns hold one (or are about to).
    private let state = Mutex<(free: [SphinxDecoder], lent: Int)>(([], 0))
    /// The most decoders there will be: also the most turns recognised at once.
    public let decoders: Int
    /// The rate of Debian's en-us model (its feat.params: `-upperf 6800`, above 8 kHz's band).
    static let modelRate = 16_000
    /// Audio gathered before a job is sent while the user speaks: a partial about every 300 ms.
    static let chunkMs = 300

    /// Decoders load on first use, on a worker (about 0.4 s and 30 MB each), so a server that
    /// never hears speech never pays for them; the model files are checked now.
    public init(decoders: Int, pool: WorkerPool, model: SphinxDecoder.Model = .debianEnglish) throws {
        try SphinxDecoder.check(model)
        self.decoders = max(1, decoders)
        self.pool = pool
        self.model = model
    }

    public func begin(on loop: EventLoop, sampleRate: Int, choice: TranscriptionChoice, _ onEvent: @escaping (TranscriptionEvent) -> Void) -> any TranscriptionSession {
        let reserved = state.withLock { s -> Bool in
            guard s.lent < decoders else { return false }
            s.lent += 1
            return true
        }
        if reserved { SpeechMetrics.shared.recognizersBusy.add(1) }
        return SphinxTranscription(reserved: reserved, owner: self, loop: loop, sampleRate: sampleRate, onEvent: onEvent)
    }

    /// On a worker: a free decoder, or a new one (its turn reserved the room for it).
    fileprivate func checkOut() -> Result<SphinxDecoder, SphinxDecoder.LoadError> {
        if let decoder = state.withLock({ $0.free.popLast() }) { return .success(decoder) }
        return Result { () throws(SphinxDecoder.LoadError) in try SphinxDecoder(model) }
    }

    /// The turn is over; its decoder, if it had one, is free for the next.
    fileprivate func giveBack(_ decoder: SphinxDecoder?) {
        state.withLock { s in
            if let decoder { s.free.append(decoder) }
            s.lent -= 1
        }
        SpeechMetrics.shared.recognizersBusy.add(-1)
    }
}

/// One turn's recognition, on its session's loop.
private final class SphinxTranscription: TranscriptionSession {
    /// The decoder this turn holds, from its first job on, and the resampler bringing its audio to
    /// the model's rate, if it needs one (only jobs touch them, one at a time).
    private final class Lease: @unchecked Sendable {
        var decoder: SphinxDecoder?
        var resampler: Resampler?
    }

    private let lease = Lease()
    private var reserved: Bool
    private let owner: SphinxTranscriber
    private let loop: EventLoop
    private let onEvent: (TranscriptionEvent) -> Void
    private let sampleRate: Int
    private var pending: [Int16] = []
    private var inFlight: OffloadTicket?
    private var started = false
    /// The speaker went quiet: the next job settles (see the type's comment).
    private var settling = false
    private var finishing = false
    private var over = false
    /// The turn's audio and the decoder's CPU time on it, for the real-time factor.
    private var audioSamples = 0
    private var cpuSeconds = 0.0

    init(reserved: Bool, owner: SphinxTranscriber, loop: EventLoop, sampleRate: Int, onEvent: @escaping (TranscriptionEvent) -> Void) {
        self.reserved = reserved
        self.sampleRate = sampleRate
        self.owner = owner
        self.loop = loop
        self.onEvent = onEvent
        if !reserved {
            fail("overloaded", "every speech recogniser is busy (\(owner.decoders) turns at once): the server is overloaded")
        }
    }

    func append(_ samples: [Int16]) {
        guard !over, !finishing else { return }
        pending += samples
        pump()
    }

    func quiet() {
        guard !over, !finishing else { return }
        settling = true
        pump()
    }

    func finish() {
        guard !over else { return }
        finishing = true
        pump()
    }

    func cancel() {
        guard !over else { return }
        over = true
        // A job still running has the decoder: it comes back when that job's result does.
        if inFlight == nil { release() }
    }

    private struct JobResult: Sendable {
        let text: String
        let cpuSeconds: Double
        let loadError: String?
    }

    private func pump() {
        guard inFlight == nil, !over else { return }
        guard finishing || settling || pending.count >= SphinxTranscriber.chunkMs * sampleRate / 1000 else { return }
        let samples = pending, start = !started, end = finishing, settles = settling && !finishing, lease = lease, owner = owner, rate = sampleRate
        pending = []
        settling = false
        started = true
        audioSamples += samples.count
        inFlight = loop.offload(to: owner.pool, {
            if lease.decoder == nil {
                switch owner.checkOut() {
                case .success(let decoder): lease.decoder = decoder
                case .failure(let error): return JobResult(text: "", cpuSeconds: 0, loadError: error.description)
                }
            }
            let decoder = lease.decoder!
            let clock = ThreadCPUClock()
            if start { decoder.start(sourceRate: rate) }
            if samples.isEmpty {
                // A quiet with no audio since the last job: its hypothesis stands.
            } else if rate == SphinxTranscriber.modelRate {
                decoder.process(samples)
            } else {
                if lease.resampler == nil {
                    do { lease.resampler = try Resampler(from: rate, to: SphinxTranscriber.modelRate) } catch {
                        return JobResult(text: "", cpuSeconds: 0, loadError: "audio at \(rate) Hz cannot be resampled: \(error)")
                    }
                }
                decoder.process(lease.resampler!.process(samples))
            }
            let text = end ? decoder.end() : decoder.hypothesis
            return JobResult(text: text, cpuSeconds: clock.elapsed, loadError: nil)
        }, then: { [self] result in completed(result, final: end, settled: settles) })
        if inFlight == nil {
            fail("overloaded", "the speech worker queue is full (\(owner.pool.queueLimit) jobs waiting): the server is overloaded")
        }
    }

    private func completed(_ result: JobResult, final: Bool, settled: Bool) {
        inFlight = nil
        cpuSeconds += result.cpuSeconds
        if over { return release() }
        if let problem = result.loadError { return fail("transcription_failed", problem) }
        if final {
            over = true
            release()
            if audioSamples > 0 { SpeechMetrics.shared.recognitionRealTimeFactor.observe(seconds: cpuSeconds / (Double(audioSamples) / Double(sampleRate))) }
            onEvent(.final(result.text))
        } else {
            // Settled words are reported even when there are none: "no words" decides too.
            if settled { onEvent(.settled(result.text)) } else if !result.text.isEmpty { onEvent(.partial(result.text)) }
            pump()
        }
    }

    /// Reported from the loop, never from inside `begin` or `append`.
    private func fail(_ code: String, _ message: String) {
        over = true
        release()
        if code == "overloaded" { SpeechMetrics.shared.overloaded.add(1) }
        let onEvent = onEvent
        loop.schedule(after: 0) { onEvent(.failed(ModelError(code: code, message: message))) }
    }

    private func release() {
        guard reserved else { return }
        reserved = false
        owner.giveBack(lease.decoder)
        lease.decoder = nil
    }
}
