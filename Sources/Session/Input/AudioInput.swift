import Codec
import SessionEngine

/// What turns a session's incoming audio into mono samples at the engine's rate: an Opus decoder
/// that decodes straight at 16 kHz (libopus resamples inside the decoder, far more cheaply than a
/// separate resampler after it: a profile of 200 speakers had the 48 kHz path spend a fifth of the
/// server's time in libspeexdsp), the pcm16 path (24 kHz) with its downsampler to 16 kHz, made on
/// first use, or G.711 decoded by table and kept at its 8 kHz.
package final class AudioInput {
    static let opusFormat = AudioFormat(sampleRate: .hz16000, channels: .mono)
    private var decoder: OpusDecoder?
    private var from24k: Downsampler24k?
    private var decoded = [Int16](repeating: 0, count: 0)
    /// The duration of the last input, before resampling (whose filter delay would blur it).
    private(set) var lastInputNanoseconds: UInt64 = 0

    /// libopus reports its decoder's size; libspeexdsp does not report its resampler's, so it
    /// counts as a 4 KiB estimate (filter history and coefficients at quality 3, and the
    /// downsampler's tail).
    var stateBytes: Int { (decoder?.stateBytes ?? 0) + decoded.capacity * 2 + (from24k == nil ? 0 : 4096) }

    package func opus(_ packet: UnsafeRawBufferPointer) throws -> [Int16] {
        if decoder == nil {
            decoder = try OpusDecoder(format: Self.opusFormat)
            decoded = [Int16](repeating: 0, count: decoder!.maxSamplesPerChannel)
        }
        let n = try decoded.withUnsafeMutableBufferPointer { try decoder!.decode(packet, into: $0) }
        lastInputNanoseconds = duration(n, rate: 16_000)
        return Array(decoded[..<n])
    }

    /// A 20 ms Opus packet that never arrived (a WebRTC call's jitter buffer found the hole):
    /// recovered from the in-band FEC of `next` when that packet is already here (RFC 6716
    /// section 2.1.7; the answer's `useinbandfec=1` asks the browser to send it), else concealed
    /// from what came before. Nothing before the first packet: there is nothing to conceal from.
    package func opusLost(next: UnsafeRawBufferPointer?) throws -> [Int16] {
        guard let decoder else { return [] }
        let n = try decoded.withUnsafeMutableBufferPointer { out in
            if let next { try decoder.recoverLoss(.ms20, from: next, into: out) } else { try decoder.concealLoss(.ms20, into: out) }
        }
        lastInputNanoseconds = duration(n, rate: 16_000)
        return Array(decoded[..<n])
    }

    /// An `input_audio_buffer.append`'s bytes in the session's input format (pcm16 or G.711; the
    /// connection has refused anything else, and an odd pcm16 byte count, already).
    func appended(_ bytes: [UInt8], as format: RealtimeAudioFormat) throws -> [Int16] {
        if let law = format.g711Law { return g711(bytes, law) }
        if format == .pcm16k { return pcm16k(bytes) }
        return try bytes.withUnsafeBytes { try pcm24k(littleEndian: $0) }
    }

    /// pcm16 at 16 kHz (a GPT-Live session's `audio/pcm` at 16000): the engine's rate already.
    private func pcm16k(_ bytes: [UInt8]) -> [Int16] {
        lastInputNanoseconds = duration(bytes.count / 2, rate: 16_000)
        return bytes.withUnsafeBytes { PCM.int16s(littleEndian: $0) }
    }

    /// pcm16 at 24 kHz, little-endian, resampled as it lies: on a little-endian machine with the
    /// bytes aligned for Int16 (an array's storage is), its bytes are the samples, and no array of
    /// them is made on the way (a 20 ms frame, 50 times a second a microphone).
    func pcm24k(littleEndian bytes: UnsafeRawBufferPointer) throws -> [Int16] {
        #if _endian(little)
        if Int(bitPattern: bytes.baseAddress) % MemoryLayout<Int16>.alignment == 0 {
            return try bytes.withMemoryRebound(to: Int16.self) { try pcm24k($0) }
        }
        #endif
        return try PCM.int16s(littleEndian: bytes).withUnsafeBufferPointer { try pcm24k($0) }
    }

    private func pcm24k(_ samples: UnsafeBufferPointer<Int16>) throws -> [Int16] {
        if from24k == nil { from24k = Downsampler24k() }
        lastInputNanoseconds = duration(samples.count, rate: 24_000)
        return try from24k!.process(samples)
    }

    /// G.711 at 8 kHz, the engine's rate for it: a byte a sample, nothing to resample.
    package func g711(_ bytes: [UInt8], _ law: G711.Law) -> [Int16] {
        lastInputNanoseconds = duration(bytes.count, rate: G711.sampleRate)
        return G711.decode(bytes, law)
    }

    /// G.711 at 8 kHz that the carrier decoded already (its answering-machine detector heard it first).
    package func g711(decoded samples: [Int16]) -> [Int16] {
        lastInputNanoseconds = duration(samples.count, rate: G711.sampleRate)
        return samples
    }

    private func duration(_ samples: Int, rate: Int) -> UInt64 {
        UInt64(samples) * 1_000_000_000 / UInt64(rate)
    }
}
