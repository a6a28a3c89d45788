import CEspeak
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// libespeak-ng, the edge between Swift and the synthesiser. The library keeps one global state
/// (voice, parameters, callback), so every synthesis in the process goes through one lock; it
/// speaks far faster than real time, so one at a time is not the bottleneck (encoding is).
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
            guard espeak_SetVoiceByName(voice) == EE_OK || espeak_SetVoiceByName("en-us") == EE_OK else {
                return .failure(Failure(description: "espeak-ng: no voice \(voice) or en-us (Debian: espeak-ng-data)"))
            }
            espeak_SetParameter(espeakRATE, Int32(wordsPerMinute), 0)
            let sink = SampleSink()
            let user = Unmanaged.passUnretained(sink).toOpaque()
            let result = withExtendedLifetime(sink) {
                text.withCString { espeak_Synth($0, strlen($0) + 1, 0, POS_CHARACTER, 0, UInt32(espeakCHARS_UTF8), nil, user) }
            }
            guard result == EE_OK else { return .failure(Failure(description: "espeak-ng: synthesis failed (\(result.rawValue))")) }
            return .success((sink.samples, rate))
        }
    }

    private static func initialize() -> Result<Int, Failure> {
        let rate = espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, 0, nil, 0)
        guard rate > 0 else { return .failure(Failure(description: "espeak-ng: cannot initialise (Debian: espeak-ng-data)")) }
        espeak_SetSynthCallback(collect)
        return .success(Int(rate))
    }
}

/// Where one synthesis's samples gather; only touched under `Espeak`'s lock.
private final class SampleSink {
    var samples: [Int16] = []
}

/// espeak-ng's callback: a buffer of samples for the synthesis whose sink is the event's user data.
private let collect: @convention(c) (UnsafeMutablePointer<Int16>?, Int32, UnsafeMutablePointer<espeak_EVENT>?) -> Int32 = { wav, count, events in
    guard let events, let user = events.pointee.user_data else { return 0 }
    let sink = Unmanaged<SampleSink>.fromOpaque(user).takeUnretainedValue()
    if let wav, count > 0 { sink.samples.append(contentsOf: UnsafeBufferPointer(start: wav, count: Int(count))) }
    return 0
}
