@testable import Codec
import Glibc
import Testing

/// What `OggOpusWriter` writes reads back through `OggOpusFile`: the headers' fields, every
/// packet, the granule position, and audio that decodes to what was encoded.
struct OggOpusWriterTests {
    @Test func aStereoStreamReadsBack() throws {
        let encoder = try OpusEncoder(format: AudioFormat(sampleRate: .hz16000, channels: .stereo))
        let preSkip = encoder.lookahead * 3
        var writer = OggOpusWriter(channels: 2, preSkip: preSkip, serial: 7)
        var bytes = writer.headers(inputRate: 16_000)
        var packets: [[UInt8]] = []
        // 3.02 s: 151 frames of 20 ms, a 440 Hz tone on the left and silence on the right.
        for n in 0..<151 {
            var frame = [Int16](repeating: 0, count: 640)
            for i in 0..<320 {
                let t = Double(n * 320 + i) / 16_000
                frame[2 * i] = Int16(8_000 * sin(2 * Double.pi * 440 * t))
            }
            let packet = try encoder.encode(frame)
            packets.append(packet)
            bytes += writer.append(packet, samples48k: 960)
        }
        bytes += writer.finish()
        let file = try OggOpusFile(bytes: bytes)
        #expect(file.channels == 2 && file.preSkip == preSkip && file.inputSampleRate == 16_000)
        #expect(file.packets == packets)
        #expect(file.finalGranulePosition == Int64(preSkip + 151 * 960))
        #expect(abs(file.duration - 3.02) < 0.001)
    }
}
