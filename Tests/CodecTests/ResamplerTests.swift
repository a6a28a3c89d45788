import Codec
import Testing

@Suite struct ResamplerTests {
    /// Frequency estimated from zero crossings.
    func frequency(_ samples: [Int16], rate: Int) -> Double {
        var crossings = 0
        for i in 1..<samples.count where (samples[i - 1] < 0) != (samples[i] < 0) { crossings += 1 }
        return Double(crossings) / 2 / (Double(samples.count) / Double(rate))
    }

    @Test(arguments: [(48000, 16000), (16000, 48000), (48000, 24000), (24000, 48000), (24000, 16000), (22050, 48000)])
    func keepsPitchLevelAndDuration(from: Int, to: Int) throws {
        let input = Signals.sine(440, seconds: 1, rate: from)
        let output = try Resampler(from: from, to: to).process(input)
        #expect(abs(output.count - to) <= to / 100, "\(output.count) samples for one second at \(to) Hz")
        #expect(abs(frequency(output, rate: to) - 440) < 5)
        #expect(abs(PCM.dBFS(output.dropFirst(to / 10)) - PCM.dBFS(input)) < 0.5)
    }

    @Test func streamingInPiecesEqualsResamplingWhole() throws {
        let input = Signals.voiced(seconds: 0.5, rate: 48000)
        let whole = try Resampler(from: 48000, to: 16000).process(input)
        let streaming = try Resampler(from: 48000, to: 16000)
        var pieces: [Int16] = []
        for start in stride(from: 0, to: input.count, by: 960) { pieces += streaming.process(Array(input[start..<min(input.count, start + 960)])) }
        #expect(pieces == whole)
    }

    @Test func refusesAbsurdRates() {
        #expect(throws: Resampler.Failure.unsupportedRate(0)) { try Resampler(from: 0, to: 16000) }
    }

    @Test func pcmConversionsClipAndRoundTrip() {
        #expect(PCM.int16(1.5) == .max && PCM.int16(-1.5) == .min && PCM.int16(0) == 0)
        let samples: [Int16] = [0, 1, -1, .max, .min, 12345]
        #expect(PCM.int16s(PCM.floats(samples)) == samples)
        let bytes = PCM.littleEndianBytes(samples)
        #expect(bytes.prefix(4) == [0, 0, 1, 0])
        #expect(bytes.withUnsafeBytes { PCM.int16s(littleEndian: $0) } == samples)
        #expect(PCM.dBFS([Int16](repeating: 0, count: 10)) == -.infinity)
    }
}
