import Codec
import Glibc

/// Test signals and comparisons.
enum Signals {
    /// A vowel-like tone: a 150 Hz fundamental with falling harmonics, interleaved for `channels`.
    static func voiced(seconds: Double, rate: Int, channels: Int = 1, amplitude: Double = 0.3) -> [Int16] {
        let count = Int(seconds * Double(rate))
        var out = [Int16](repeating: 0, count: count * channels)
        for i in 0..<count {
            let t = Double(i) / Double(rate)
            var v = 0.0
            for h in 1...8 { v += sin(2 * .pi * 150 * Double(h) * t) / Double(h) }
            let sample = Int16(max(-32767, min(32767, v * amplitude * 32767 / 2)))
            for c in 0..<channels { out[i * channels + c] = sample }
        }
        return out
    }

    static func sine(_ frequency: Double, seconds: Double, rate: Int, amplitude: Double = 0.5) -> [Int16] {
        (0..<Int(seconds * Double(rate))).map { Int16(sin(2 * .pi * frequency * Double($0) / Double(rate)) * amplitude * 32767) }
    }

    /// RMS of each `window`-sample block: the loudness envelope.
    static func envelope(_ samples: [Int16], window: Int) -> [Double] {
        stride(from: 0, to: samples.count - window + 1, by: window).map { PCM.rms(samples[$0..<($0 + window)]) }
    }

    /// Pearson correlation of two equal-length series.
    static func correlation(_ a: [Double], _ b: [Double]) -> Double {
        let n = min(a.count, b.count)
        guard n > 1 else { return 0 }
        let ma = a.prefix(n).reduce(0, +) / Double(n), mb = b.prefix(n).reduce(0, +) / Double(n)
        var num = 0.0, da = 0.0, db = 0.0
        for i in 0..<n {
            num += (a[i] - ma) * (b[i] - mb)
            da += (a[i] - ma) * (a[i] - ma)
            db += (b[i] - mb) * (b[i] - mb)
        }
        return da > 0 && db > 0 ? num / (da * db).squareRoot() : 0
    }

    /// The best envelope correlation over lags of up to `maxLag` windows either way.
    static func bestEnvelopeCorrelation(_ a: [Int16], _ b: [Int16], window: Int, maxLag: Int) -> Double {
        let ea = envelope(a, window: window), eb = envelope(b, window: window)
        var best = -1.0
        for lag in -maxLag...maxLag {
            let x = lag >= 0 ? Array(ea.dropFirst(lag)) : ea
            let y = lag >= 0 ? eb : Array(eb.dropFirst(-lag))
            best = max(best, correlation(x, y))
        }
        return best
    }

    /// Mean squared difference, normalised by the reference's power: 0 is identical, 1 is as far
    /// off as silence would be.
    static func relativeError(_ reference: ArraySlice<Int16>, _ candidate: ArraySlice<Int16>) -> Double {
        var error = 0.0, power = 0.0
        for (r, c) in zip(reference, candidate) {
            error += (Double(r) - Double(c)) * (Double(r) - Double(c))
            power += Double(r) * Double(r)
        }
        return power > 0 ? error / power : 0
    }
}
