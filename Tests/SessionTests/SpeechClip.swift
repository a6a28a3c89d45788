import Codec
import Glibc
import TestSupport

/// Real speech for turn-detection tests: espeak-ng says a sentence, resampled to 16 kHz (or
/// `rate`), with silence before and after and, optionally, white noise under the whole clip.
struct SpeechClip {
    var samples: [Int16]
    /// Where the speech really begins and ends, in ms from the clip's start: the first and last
    /// sample of the clean speech above -60 dBFS.
    var speechStartMs: Int
    var speechEndMs: Int

    var rate = 16_000

    var durationMs: Int { samples.count * 1000 / rate }

    static func make(_ sentence: String, silenceMs: Int = 1000, noiseDBFS: Double? = nil, seed: UInt64 = 7, rate: Int = 16_000) throws -> SpeechClip {
        let wav = try WAVFile.read(path: try SpeechVectors.wav(sentence))
        let speech = try Resampler(from: wav.sampleRate, to: rate).process(wav.samples)
        let audible = { (s: Int16) in abs(Int(s)) > 32 }
        let perMs = rate / 1000
        let first = speech.firstIndex(where: audible) ?? 0
        let last = speech.lastIndex(where: audible) ?? 0
        let silence = [Int16](repeating: 0, count: silenceMs * perMs)
        var clip = SpeechClip(samples: silence + speech + silence, speechStartMs: silenceMs + first / perMs, speechEndMs: silenceMs + last / perMs, rate: rate)
        if let noiseDBFS { clip.samples = mixNoise(into: clip.samples, dBFS: noiseDBFS, seed: seed) }
        return clip
    }

    /// Uniform white noise at `dBFS` RMS, mixed in with clipping.
    static func mixNoise(into samples: [Int16], dBFS: Double, seed: UInt64) -> [Int16] {
        var random = SeededRandom(seed: seed)
        // A uniform distribution on [-a, a] has RMS a/√3.
        let amplitude = 32768 * pow(10, dBFS / 20) * 3.0.squareRoot()
        return samples.map { sample in
            let mixed = Double(sample) + Double.random(in: -amplitude...amplitude, using: &random)
            return Int16(max(-32768, min(32767, mixed.rounded())))
        }
    }

    static func noise(ms: Int, dBFS: Double, seed: UInt64, rate: Int = 16_000) -> [Int16] {
        mixNoise(into: [Int16](repeating: 0, count: ms * rate / 1000), dBFS: dBFS, seed: seed)
    }

    /// The clip in pieces of `ms`, as a client streams it.
    func chunks(ms: Int) -> [[Int16]] {
        let step = ms * rate / 1000
        return stride(from: 0, to: samples.count, by: step).map { Array(samples[$0..<min(samples.count, $0 + step)]) }
    }
}
