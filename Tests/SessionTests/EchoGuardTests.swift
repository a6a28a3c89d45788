import Codec
import Glibc
import Testing
@testable import Session

/// The echo guard on known signals and a simulated clock (the gate alone, so that the canceller's
/// learning does not blur the figures): the reply's echo is held down, the user's word is not,
/// and the quiet start of the word before it crossed the gate is let through whole.
@Suite struct EchoGuardTests {
    static let rate = 16_000
    static let ms: UInt64 = 1_000_000

    static func tone(_ amplitude: Double, samples: Int, from start: Int = 0) -> [Int16] {
        (0..<samples).map { Int16(amplitude * sin(2 * .pi * 300 * Double(start + $0) / Double(rate))) }
    }

    /// Feeds `input` in 20 ms frames arriving as a real-time client's would, after a reply of
    /// `reply` played from time 0; the guard's output.
    static func run(reply: [Int16], input: [Int16]) -> [Int16] {
        let guardian = EchoGuard(sampleRate: rate, now: 0, cancels: false)
        let frame = rate / 50
        var output: [Int16] = []
        for k in 0..<(input.count / frame) {
            if k * frame < reply.count { guardian.reply(Array(reply[(k * frame)..<min(reply.count, (k + 1) * frame)]), playsAt: UInt64(k) * 20 * ms) }
            output += guardian.process(Array(input[(k * frame)..<((k + 1) * frame)]), arrived: UInt64(k + 1) * 20 * ms, duration: 20 * ms)
        }
        return output
    }

    static func frameLevels(_ samples: [Int16]) -> [Double] {
        stride(from: 0, to: samples.count - 159, by: 160).map { PCM.rms(samples[$0..<($0 + 160)]) * 32768 }
    }

    @Test func theEchoIsHeldAndTheWordPassesWithItsQuietStart() {
        let reply = Self.tone(3_000, samples: Self.rate) // -23.8 dBFS for a second
        // 300 ms of echo (-10 dB), then the user: 60 ms of a quiet onset under the gate's bar,
        // then their word, loud; then the echo again.
        var input = reply.prefix(4_800).map { Int16(Double($0) * 0.316) }
        input += Self.tone(1_200, samples: 960, from: 4_800)
        input += Self.tone(8_000, samples: 3_200, from: 5_760)
        input += reply[8_960..<16_000].map { Int16(Double($0) * 0.316) }
        let levels = Self.frameLevels(Self.run(reply: reply, input: input))
        // The echo before the word: held down to the room (far under its 670 RMS).
        #expect(levels[5..<25].allSatisfy { $0 < 50 }, "\(levels[5..<25])")
        // The onset (848 RMS) comes out whole, in the frames just before the loud word.
        let onset = levels.filter { $0 > 700 && $0 < 1_000 }.count
        #expect(onset >= 5, "\(levels.map { Int($0) })")
        #expect(levels.contains { $0 > 5_000 })
    }

    @Test func betweenRepliesTheInputPassesUntouched() {
        let guardian = EchoGuard(sampleRate: Self.rate, now: 0)
        let input = Self.tone(2_000, samples: 320)
        #expect(guardian.process(input, arrived: 20 * Self.ms, duration: 20 * Self.ms) == input)
        // A reply played a second earlier is over, tail and all.
        guardian.reply(Self.tone(3_000, samples: 320), playsAt: 0)
        #expect(guardian.process(input, arrived: 2_000 * Self.ms, duration: 20 * Self.ms) == input)
    }

    @Test func oddInputLengthsComeOutWhole() {
        let reply = Self.tone(3_000, samples: Self.rate)
        let guardian = EchoGuard(sampleRate: Self.rate, now: 0)
        var fed = 0, out = 0
        for (k, n) in [333, 17, 1_600, 160, 1, 999].enumerated() {
            guardian.reply(Array(reply[(k * 320)..<((k + 1) * 320)]), playsAt: UInt64(k) * 20 * Self.ms)
            out += guardian.process([Int16](repeating: 100, count: n), arrived: UInt64(k + 1) * 20 * Self.ms, duration: UInt64(n) * Self.ms / 16).count
            fed += n
        }
        // What is still short of a frame, or held back for the pre-roll, is all that is missing.
        #expect(fed - out < 160 * (EchoGuard.preRollFrames + 1))
        #expect(out > 0)
        // Let go, it gives back the rest: nothing is lost from the engine's audio clock.
        #expect(out + guardian.flush().count == fed)
    }
}
