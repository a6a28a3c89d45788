/// Conversions and measurements on interleaved PCM.
public enum PCM {
    /// The mean square (of samples in [-1, 1)) below which audio is taken for silence: -60 dBFS
    /// RMS, under a muted or noise-suppressed microphone's hiss and far under any voice a
    /// microphone picks up (Silero itself hears speech scaled to -60 dBFS, so this is below what
    /// it hears, not at it). What reads it: the neural VAD's gate between turns
    /// (`NeuralVoiceActivity`) and the microphone's resampling (`Downsampler24k`).
    public static let quietMeanSquare = 1e-6

    /// Int16 to float in [-1, 1).
    @inline(__always)
    public static func float(_ sample: Int16) -> Float { Float(sample) / 32768 }

    /// Float to Int16, clipping what lies outside [-1, 1].
    @inline(__always)
    public static func int16(_ sample: Float) -> Int16 {
        let scaled = (sample * 32768).rounded()
        return scaled >= 32767 ? .max : scaled <= -32768 ? .min : Int16(scaled)
    }

    public static func convert(_ input: UnsafeBufferPointer<Int16>, to output: UnsafeMutableBufferPointer<Float>) {
        precondition(output.count >= input.count)
        for i in input.indices { output[i] = float(input[i]) }
    }

    public static func convert(_ input: UnsafeBufferPointer<Float>, to output: UnsafeMutableBufferPointer<Int16>) {
        precondition(output.count >= input.count)
        for i in input.indices { output[i] = int16(input[i]) }
    }

    public static func floats(_ samples: [Int16]) -> [Float] { samples.map(float) }
    public static func int16s(_ samples: [Float]) -> [Int16] { samples.map(int16) }

    /// pcm16 as the OpenAI Realtime API carries it: little-endian bytes. A trailing odd byte is dropped.
    public static func int16s(littleEndian bytes: UnsafeRawBufferPointer) -> [Int16] {
        (0..<(bytes.count / 2)).map { Int16(bitPattern: UInt16(bytes[2 * $0]) | UInt16(bytes[2 * $0 + 1]) << 8) }
    }

    public static func littleEndianBytes(_ samples: [Int16]) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: samples.count * 2)
        for (i, sample) in samples.enumerated() {
            let bits = UInt16(bitPattern: sample)
            bytes[2 * i] = UInt8(bits & 0xFF)
            bytes[2 * i + 1] = UInt8(bits >> 8)
        }
        return bytes
    }

    /// Root mean square level, 0 (silence) to 1 (full-scale square wave).
    public static func rms<S: Collection<Int16>>(_ samples: S) -> Double {
        guard !samples.isEmpty else { return 0 }
        let sum = samples.reduce(0.0) { $0 + Double($1) * Double($1) }
        return (sum / Double(samples.count)).squareRoot() / 32768
    }

    /// Level in dB relative to full scale; -infinity for digital silence.
    public static func dBFS<S: Collection<Int16>>(_ samples: S) -> Double {
        let level = rms(samples)
        return level > 0 ? 20 * log10(level) : -.infinity
    }

    public static func peak<S: Collection<Int16>>(_ samples: S) -> Int {
        samples.reduce(0) { max($0, abs(Int($1))) }
    }
}

#if canImport(Glibc)
import Glibc
#endif
