import Codec
#if canImport(Glibc)
import Glibc
#endif

/// The line a `turn-taking` case is spoken over (issue 52's narrowband and noisy versions of every
/// sentence): the microphone as it is (pcm16 at 24 kHz), a G.711 phone line (µ-law at 8 kHz,
/// `audio/pcmu`), or that line with pink noise 10 dB under the speech, the whole case long (a
/// line's noise does not stop between words), and the session denoising near field, as a phone
/// call found noisy is (`LineNoiseFloor`, `--phone-line-denoise auto`).
enum TurnTakingLine: String, CaseIterable {
    case clean
    case g711
    case g711Noisy = "g711-noisy"

    /// The session's input settings beside its turn detection, in `session.update`'s JSON.
    var inputSettings: String {
        switch self {
        case .clean: #""format":{"type":"audio/pcm","rate":24000}"#
        case .g711: #""format":{"type":"audio/pcmu"}"#
        case .g711Noisy: #""format":{"type":"audio/pcmu"},"noise_reduction":{"type":"near_field"}"#
        }
    }

    /// The quiet before the first word of a turn case. A noisy call's line is open before its
    /// caller speaks (the ringing, the greeting): 3.5 s of it, so that a server that watches the
    /// line's floor has heard it (`LineNoiseFloor` decides in 3 s), as it would have on a call.
    var leadMs: Int { self == .g711Noisy ? 3_500 : 500 }

    /// What the speaker's 24 kHz samples go through on their way to the server: nil for none.
    func phoneLine() throws -> Resampler? {
        self == .clean ? nil : try Resampler(from: 24_000, to: 8_000)
    }

    /// `audio` (24 kHz) with the line's noise added: pink noise `snrDB` under the RMS of the
    /// speech in it (or in `speechLike`, for quiet that comes before speech), the same noise for
    /// the same `seed`.
    func noisy(_ audio: [Int16], seed: UInt64, snrDB: Double = 10, speechLike: [Int16]? = nil) -> [Int16] {
        guard self == .g711Noisy else { return audio }
        var squares = 0.0, count = 0
        for sample in speechLike ?? audio where abs(Int(sample)) > 300 {
            squares += Double(sample) * Double(sample)
            count += 1
        }
        guard count > 0 else { return audio }
        let speechRMS = (squares / Double(count)).squareRoot()
        var pink = PinkNoise(seed: seed)
        let noise = (0..<audio.count).map { _ in pink.next() }
        let noiseRMS = (noise.reduce(0) { $0 + $1 * $1 } / Double(noise.count)).squareRoot()
        let gain = speechRMS / pow(10, snrDB / 20) / max(noiseRMS, 1e-9)
        return zip(audio, noise).map { Int16(clamping: Int((Double($0) + $1 * gain).rounded())) }
    }
}

/// Pink (1/f) noise: white noise from a seeded SplitMix64 through Paul Kellet's economy filter
/// (three poles, within 0.05 dB of 1/f above 9 Hz at 44.1 kHz; close enough at 24 kHz for a
/// line's hiss and hum).
struct PinkNoise {
    private var state: UInt64
    private var b0 = 0.0, b1 = 0.0, b2 = 0.0

    init(seed: UInt64) { state = seed }

    mutating func next() -> Double {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        let white = Double(z >> 11) / Double(1 << 53) * 2 - 1
        b0 = 0.99765 * b0 + white * 0.0990460
        b1 = 0.96300 * b1 + white * 0.2965164
        b2 = 0.57000 * b2 + white * 1.0526913
        return b0 + b1 + b2 + white * 0.1848
    }
}
