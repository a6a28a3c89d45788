import Codec

/// What turns a session's incoming audio into 16 kHz mono for the engine: an Opus decoder that
/// decodes straight at 16 kHz (libopus resamples inside the decoder, far more cheaply than a
/// separate resampler after it: a profile of 200 speakers had the 48 kHz path spend a fifth of the
/// server's time in libspeexdsp), or the pcm16 path (24 kHz) with its resampler, made on first use.
final class AudioInput {
    static let opusFormat = AudioFormat(sampleRate: .hz16000, channels: .mono)
    private var decoder: OpusDecoder?
    private var from24k: Resampler?
    private var decoded = [Int16](repeating: 0, count: 0)
    /// The duration of the last input, before resampling (whose filter delay would blur it).
    private(set) var lastInputNanoseconds: UInt64 = 0

    /// libopus reports its decoder's size; libspeexdsp does not report its resampler's, so it
    /// counts as a 4 KiB estimate (filter history and coefficients at quality 3).
    var stateBytes: Int { (decoder?.stateBytes ?? 0) + decoded.capacity * 2 + (from24k == nil ? 0 : 4096) }

    func opus(_ packet: UnsafeRawBufferPointer) throws -> [Int16] {
        if decoder == nil {
            decoder = try OpusDecoder(format: Self.opusFormat)
            decoded = [Int16](repeating: 0, count: decoder!.maxSamplesPerChannel)
        }
        let n = try decoded.withUnsafeMutableBufferPointer { try decoder!.decode(packet, into: $0) }
        lastInputNanoseconds = UInt64(n) * 1_000_000_000 / 16000
        return Array(decoded[..<n])
    }

    func pcm24k(_ samples: [Int16]) throws -> [Int16] {
        if from24k == nil { from24k = try Resampler(from: 24000, to: 16000) }
        lastInputNanoseconds = UInt64(samples.count) * 1_000_000_000 / 24000
        return from24k!.process(samples)
    }
}
