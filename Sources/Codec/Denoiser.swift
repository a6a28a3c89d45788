/// Noise reduction for a session's input, the Realtime API's `noise_reduction`: libspeexdsp's
/// preprocessor with only its denoiser on (a spectral-subtraction suppressor that tracks the noise
/// floor per band and attenuates what does not rise above it), before the VAD and the recogniser.
///
/// How much it may take off the noise is the one thing the two kinds differ in:
/// - `nearField` (a headset, a phone at the mouth): the voice is far above the noise, so a mild
///   -15 dB ceiling removes the hiss without touching the speech's quiet consonants.
/// - `farField` (a laptop's or a room's microphone): the voice is nearer the noise floor and the
///   noise more of the signal, so the ceiling is -25 dB; the cost is more "musical noise" and
///   softer word endings, which matter less than a VAD that stays open on fan noise.
/// (speexdsp's own default is -15 dB.)
///
/// Frames of 20 ms (`frameMs`) at the engine's rate (16 or 8 kHz): every input Parley takes (20 ms
/// Opus, 20 ms G.711, 100 ms pcm16) is a whole number of them. `process(_:)` takes input of any
/// length, keeps what is short of a frame for the next call, and returns the whole frames done;
/// the samples it holds back keep their buffer, so a call allocates only the output array it returns,
/// and the frames are denoised in that array, in place.
///
/// Not thread-safe; one per stream.
public final class Denoiser {
    public enum Kind: String, Sendable, CaseIterable {
        case nearField = "near_field"
        case farField = "far_field"

        /// The most the denoiser attenuates noise (see the type's comment for why these).
        public var suppressionDB: Int {
            switch self {
            case .nearField: -15
            case .farField: -25
            }
        }
    }

    public enum Failure: Error, Equatable, Sendable {
        case unsupportedRate(Int)
        /// A frame of the wrong length was given to `denoise(frame:)`.
        case frameLength(expected: Int, got: Int)
        /// speexdsp could not make its state.
        case libspeexdsp
    }

    public static let frameMs = 20
    public let kind: Kind
    public let sampleRate: Int
    public let frameSamples: Int
    private let preprocess: SpeexPreprocessState
    /// Input short of a whole frame, waiting for the next call.
    private var pending: [Int16]

    public init(kind: Kind, sampleRate: Int) throws(Failure) {
        guard [8_000, 16_000].contains(sampleRate) else { throw .unsupportedRate(sampleRate) }
        self.kind = kind
        self.sampleRate = sampleRate
        frameSamples = sampleRate / 1000 * Self.frameMs
        do {
            preprocess = try SpeexPreprocessState(frameSamples: frameSamples, sampleRate: sampleRate)
        } catch {
            throw .libspeexdsp
        }
        preprocess.setDenoise(true)
        preprocess.setNoiseSuppress(dB: kind.suppressionDB)
        pending = []
        pending.reserveCapacity(frameSamples)
    }

    /// One frame, exactly `frameSamples` long, denoised in place.
    public func denoise(frame: UnsafeMutableBufferPointer<Int16>) throws(Failure) {
        guard frame.count == frameSamples else { throw .frameLength(expected: frameSamples, got: frame.count) }
        guard let base = frame.baseAddress else { return }
        preprocess.run(base)
    }

    /// `input`'s whole frames denoised, after what was held from the last call; the rest is held.
    /// The output is a multiple of `frameSamples` long.
    public func process(_ input: [Int16]) -> [Int16] {
        let total = pending.count + input.count
        let whole = total / frameSamples * frameSamples
        guard whole > 0 else {
            pending += input
            return []
        }
        var output = [Int16](repeating: 0, count: whole)
        var used = 0  // of `input`
        output.withUnsafeMutableBufferPointer { out in
            let base = out.baseAddress!
            // What was held starts the first frame (it is shorter than one, so `whole` covers it).
            for (i, sample) in pending.enumerated() { base[i] = sample }
            let held = pending.count
            pending.removeAll(keepingCapacity: true)
            used = whole - held
            input.withUnsafeBufferPointer { from in (base + held).update(from: from.baseAddress!, count: used) }
            for at in stride(from: 0, to: whole, by: frameSamples) { preprocess.run(base + at) }
        }
        if used < input.count { pending += input[used...] }
        return output
    }

    /// What it holds short of a frame, undenoised: for a session that turns it off, so that the
    /// engine's audio clock loses no samples.
    public func flush() -> [Int16] {
        defer { pending.removeAll(keepingCapacity: true) }
        return pending
    }

    /// The state's size. speexdsp does not report it; this is what its preprocessor allocated as
    /// measured with mallinfo2 around `speex_preprocess_state_init` (libspeexdsp 1.2.1, 20 ms
    /// frames: 25,328 bytes at 8 kHz, 47,072 at 16 kHz, so 136 a frame sample and 3.5 KiB more),
    /// with what this type holds back.
    public var stateBytes: Int {
        frameSamples * 136 + 3_584 + pending.capacity * 2
    }
}
