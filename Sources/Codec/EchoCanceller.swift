/// libspeexdsp's acoustic echo canceller (MDF, a frequency-domain adaptive filter) with its
/// preprocessor's residual echo suppression after it: given what was played (the reference) and
/// what the microphone heard, it subtracts its running estimate of the played audio's echo.
///
/// Works on frames of 10 ms (`frameSamples`), the size speexdsp's documentation suggests (10-20 ms):
/// every input Parley takes (20 ms Opus, 20 ms G.711, 100 ms pcm16) is a whole number of them. The
/// filter covers echoes up to `tailMs` after the reference; its state grows with the tail (about
/// 100 KB at 16 kHz and 300 ms), so one is made only for a session that needs it.
///
/// Not thread-safe; one per stream. Allocation-free after `init`.
public final class EchoCanceller {
    public enum Failure: Error, Equatable, Sendable {
        case unsupportedRate(Int)
        case unsupportedTail(ms: Int)
        /// A frame of the wrong length was given.
        case frameLength(expected: Int, got: Int)
        /// speexdsp could not make its state.
        case libspeexdsp
    }

    public static let frameMs = 10
    public static let tailRange = 20...1_000
    public let sampleRate: Int
    public let frameSamples: Int
    public let tailSamples: Int
    private let echo: SpeexEchoState
    private let preprocess: SpeexPreprocessState?

    /// `suppressResidual`: run the preprocessor's residual echo suppression after the filter (its
    /// noise suppression, AGC and VAD stay off: the VAD after this is the server's own).
    public init(sampleRate: Int, tailMs: Int = 300, suppressResidual: Bool = true) throws(Failure) {
        // The rates the engine hears at (G.711's 8 kHz, 16 kHz), and 24/48 kHz for completeness.
        guard [8_000, 16_000, 24_000, 48_000].contains(sampleRate) else { throw .unsupportedRate(sampleRate) }
        guard Self.tailRange.contains(tailMs) else { throw .unsupportedTail(ms: tailMs) }
        self.sampleRate = sampleRate
        frameSamples = sampleRate / 1000 * Self.frameMs
        tailSamples = sampleRate / 1000 * tailMs
        do {
            echo = try SpeexEchoState(frameSamples: frameSamples, tailSamples: tailSamples, sampleRate: sampleRate)
            if suppressResidual {
                let preprocess = try SpeexPreprocessState(frameSamples: frameSamples, sampleRate: sampleRate)
                // Denoising is on by default; here it is off (the input's noise is the denoiser's
                // business, `Denoiser`), as are AGC and VAD.
                preprocess.setDenoise(false)
                preprocess.setEchoState(echo)
                self.preprocess = preprocess
            } else {
                preprocess = nil
            }
        } catch {
            throw .libspeexdsp
        }
    }

    /// One frame: `microphone` less the echo of `reference` (what was played when the microphone's
    /// frame began, or before it within the tail) into `output`; each exactly `frameSamples` long.
    /// `output` may be `microphone`'s own memory.
    public func process(microphone: UnsafeBufferPointer<Int16>, reference: UnsafeBufferPointer<Int16>,
                        into output: UnsafeMutableBufferPointer<Int16>) throws(Failure) {
        for count in [microphone.count, reference.count, output.count] where count != frameSamples {
            throw .frameLength(expected: frameSamples, got: count)
        }
        guard let mic = microphone.baseAddress, let played = reference.baseAddress, let out = output.baseAddress else { return }
        echo.cancel(mic, played, into: out)
        preprocess?.run(out)
    }

    /// Forgets the echo path it learnt (a new call, another device).
    public func reset() {
        echo.reset()
    }

    /// The state's size. speexdsp does not report it; this is what its float build allocates
    /// (mdf.c: with N = 2 × frame and M = tail ÷ frame blocks, two M × N filters, an (M+1) × N
    /// history of the reference's spectra and about a dozen N-sized buffers; the preprocessor's
    /// about twenty frame-sized ones and its 24-band filter bank), to within a few per cent.
    public var stateBytes: Int {
        let n = 2 * frameSamples
        let blocks = (tailSamples + frameSamples - 1) / frameSamples
        let echoFloats = 2 * blocks * n + (blocks + 1) * n + 14 * n + 2 * (frameSamples + 1) + blocks
        let preprocessFloats = preprocess == nil ? 0 : 24 * n + 2 * 24 * n / 2
        return (echoFloats + preprocessFloats) * 4 + 2 * 1024
    }
}
