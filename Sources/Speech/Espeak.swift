import CEspeak
import Synchronization

/// libespeak-ng, the edge between Swift and the synthesiser (CEspeak opens it with dlopen, through
/// `SpeechLibrary.espeak`, when first used). The library keeps one global state (voice,
/// parameters, callback), so every synthesis in the process goes through one lock; it speaks far
/// faster than real time, so one at a time is not the bottleneck (encoding is).
final class Espeak: Sendable {
    static let shared = Espeak()

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// The sample rate once initialised (22,050 Hz with Debian's data), or the failure.
    private let state = Mutex<Result<Int, Failure>?>(nil)

    /// Mono samples of `text` spoken with `voice` (an espeak-ng voice name such as "en-us"), and
    /// their sample rate.
    func synthesize(_ text: String, voice: String, wordsPerMinute: Int) -> Result<(samples: [Int16], sampleRate: Int), Failure> {
        state.withLock { state in
            if state == nil { state = Self.initialize() }
            guard case .success(let rate) = state! else {
                if case .failure(let failure) = state! { return .failure(failure) }
                return .failure(Failure(description: "espeak-ng: not initialised"))
            }
            guard parley_espeak_set_voice(voice) == 0 || parley_espeak_set_voice("en-us") == 0 else {
                return .failure(Failure(description: "espeak-ng: no voice \(voice) or en-us (Debian: espeak-ng-data)"))
            }
            _ = parley_espeak_set_rate(Int32(wordsPerMinute))
            let sink = SampleSink()
            let user = Unmanaged.passUnretained(sink).toOpaque()
            let result = withExtendedLifetime(sink) {
                parley_espeak_synth(text, user)
            }
            guard result == 0 else { return .failure(Failure(description: "espeak-ng: synthesis failed (\(result))")) }
            return .success((sink.samples, rate))
        }
    }

    private static func initialize() -> Result<Int, Failure> {
        do { try SpeechLibrary.espeak.load() } catch { return .failure(Failure(description: error.description)) }
        let rate = parley_espeak_initialize(collect)
        guard rate > 0 else { return .failure(Failure(description: "espeak-ng: cannot initialise (Debian: espeak-ng-data)")) }
        return .success(Int(rate))
    }
}

/// Where one synthesis's samples gather; only touched under `Espeak`'s lock.
private final class SampleSink {
    var samples: [Int16] = []
}

/// espeak-ng's callback: a buffer of samples for the synthesis whose sink is the user data.
private let collect: @convention(c) (UnsafeMutablePointer<Int16>?, Int32, UnsafeMutableRawPointer?) -> Int32 = { wav, count, user in
    guard let user else { return 0 }
    let sink = Unmanaged<SampleSink>.fromOpaque(user).takeUnretainedValue()
    if let wav, count > 0 { sink.samples.append(contentsOf: UnsafeBufferPointer(start: wav, count: Int(count))) }
    return 0
}
