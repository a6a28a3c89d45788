import Glibc

/// Whether a phone line is noisy enough for its denoiser to pay (issue 52, item 3): a pure value
/// fed the call's input as the engine will hear it (after the echo guard, which holds the reply's
/// echo down to the room's level), answering once, and for good, that the line is noisy.
///
/// The rule is minimum statistics (Martin, 2001) at its plainest: speech has gaps, a line's noise
/// does not, so the quietest 20 ms of each second is the line's floor. Three seconds in a row whose
/// floor is at or above `thresholdDB` make the line noisy. Measured on G.711 lines of WordErrorRate's
/// sentences in four voices (docs/benchmarks.md, "Telephone audio"): the median of a clip's
/// one-second floors was -64.7 dBFS on a clean line (at most -42.6, in a clip with speech in every
/// 20 ms of it), -49.3 with pink noise at 30 dB SNR, -40.0 at 20 dB and -30.7 at 10 dB (-32.8 to
/// -27.9), where libspeexdsp's denoiser takes WER from 51.9 % to 44.4 %. A line between calls, or
/// a caller between turns, is quieter still than a sentence's gaps. The denoiser costs 0.56
/// millicores and 25 KiB a call, so it runs only where this says it helps.
public struct LineNoiseFloor: Sendable, Equatable {
    /// A second's floor at or above this is noise (dBFS of a 20 ms frame's RMS).
    public static let thresholdDB: Float = -40
    /// How many seconds in a row it takes.
    public static let seconds = 3

    public private(set) var isNoisy = false
    private let frameSamples: Int32
    private var squares: Double = 0
    private var filled: Int32 = 0
    private var secondFloor: Float = .infinity
    private var framesThisSecond: UInt8 = 0
    private var noisySeconds: UInt8 = 0

    /// `sampleRate`: the input's (8,000 on a G.711 line).
    public init(sampleRate: Int) {
        frameSamples = Int32(max(1, sampleRate / 50))
    }

    /// The floor of each 20 ms of `samples`, into the second's. True when these samples made the
    /// line noisy (once; `isNoisy` stays true).
    public mutating func heard(_ samples: [Int16]) -> Bool {
        guard !isNoisy else { return false }
        for sample in samples {
            let value = Double(sample)
            squares += value * value
            filled += 1
            guard filled == frameSamples else { continue }
            frameEnded()
            if isNoisy { return true }
        }
        return false
    }

    private mutating func frameEnded() {
        let meanSquare = squares / Double(frameSamples) / (32_768.0 * 32_768.0)
        let level = Float(10 * log10(max(meanSquare, 1e-12)))
        squares = 0
        filled = 0
        secondFloor = min(secondFloor, level)
        framesThisSecond += 1
        guard framesThisSecond == 50 else { return }
        noisySeconds = secondFloor >= Self.thresholdDB ? noisySeconds + 1 : 0
        secondFloor = .infinity
        framesThisSecond = 0
        if noisySeconds >= Self.seconds { isNoisy = true }
    }
}
