import Codec
import Testing

/// The microphone's 24 to 16 kHz path: the filter's output where there is sound, the cheap one
/// where there is none, and never a sample too many or too few across the switches.
@Suite struct Downsampler24kTests {
    /// `input` fed in `frame`-sample pieces.
    func fed(_ input: [Int16], frame: Int, to process: (UnsafeBufferPointer<Int16>) throws -> [Int16]) throws -> [Int16] {
        var output: [Int16] = []
        for start in stride(from: 0, to: input.count, by: frame) {
            let piece = Array(input[start..<min(input.count, start + frame)])
            output += try piece.withUnsafeBufferPointer { try process($0) }
        }
        return output
    }

    func fed(_ input: [Int16], frame: Int, to downsampler: Downsampler24k) throws -> [Int16] {
        try fed(input, frame: frame) { try downsampler.process($0) }
    }

    /// Faint noise, well under -60 dBFS (about -70).
    func faint(_ count: Int, seed: UInt64 = 7) -> [Int16] {
        var rng = seed
        return (0..<count).map { _ in
            rng = rng &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int16(truncatingIfNeeded: Int(rng >> 33) % 21) - 10
        }
    }

    @Test func soundGoesThroughTheFilterExactly() throws {
        let voiced = Signals.voiced(seconds: 1, rate: 24_000)
        let downsampler = Downsampler24k()
        let ours = try fed(voiced, frame: 480, to: downsampler)
        // The filter primed from silence (the tail starts as zeros) is the filter from its start.
        let reference = try Resampler(from: 24_000, to: 16_000)
        reference.reset()
        _ = reference.process([Int16](repeating: 0, count: 72))
        let filtered = try fed(voiced, frame: 480) { reference.process(Array($0)) }
        #expect(ours == filtered)
        #expect(!downsampler.lastFrameWasQuiet)
    }

    @Test(arguments: [480, 240, 241, 160, 7])
    func quietFramesGiveTwoThirdsOfTheirSamples(frame: Int) throws {
        let downsampler = Downsampler24k()
        let quiet = faint(24_000)
        let output = try fed(quiet, frame: frame, to: downsampler)
        #expect(downsampler.lastFrameWasQuiet)
        #expect(abs(output.count - 16_000) <= 1, "\(output.count) samples for a second")
        #expect(output.allSatisfy { abs($0) <= 10 })
    }

    @Test func switchingBetweenQuietAndSoundKeepsTheClock() throws {
        // Quiet, a tone, quiet, a tone: 4 seconds in 20 ms frames.
        let tone = Signals.sine(440, seconds: 1, rate: 24_000, amplitude: 0.3)
        let input = faint(24_000) + tone + faint(24_000, seed: 9) + tone
        let downsampler = Downsampler24k()
        let output = try fed(input, frame: 480, to: downsampler)
        #expect(output.count == 64_000)
        // The tones are where they were, at their level: the second second and the fourth.
        for second in [1, 3] {
            let body = Array(output[(second * 16_000 + 800)..<((second + 1) * 16_000 - 800)])
            #expect(abs(PCM.dBFS(body) - PCM.dBFS(tone)) < 0.5)
        }
        for second in [0, 2] {
            let body = Array(output[(second * 16_000 + 800)..<((second + 1) * 16_000 - 800)])
            #expect(PCM.dBFS(body) < -60)
        }
    }

    @Test func theQuietLevelIsMinusSixtyDBFS() throws {
        // A frame a little under -60 dBFS is quiet; a little over is sound.
        let under = Signals.sine(440, seconds: 0.02, rate: 24_000, amplitude: 0.0013)
        let over = Signals.sine(440, seconds: 0.02, rate: 24_000, amplitude: 0.0015)
        let downsampler = Downsampler24k()
        _ = try under.withUnsafeBufferPointer { try downsampler.process($0) }
        #expect(downsampler.lastFrameWasQuiet)
        _ = try over.withUnsafeBufferPointer { try downsampler.process($0) }
        #expect(!downsampler.lastFrameWasQuiet)
    }
}
