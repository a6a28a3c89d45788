import Codec
import Testing
import TestSupport

/// The canceller against a known echo: espeak-ng speech as the reference, and a microphone that
/// hears it 150 ms later at -10 dB (a loudspeaker's echo as issue 24 describes it) over a room's
/// pink noise. After it has converged, what it lets through of the echo is measured.
struct EchoCancellerTests {
    static let delayMs = 150
    static let leak = 0.316 // -10 dB

    /// Speech for `seconds`, the sentence said again and again.
    static func speech(rate: Int, seconds: Int) throws -> [Int16] {
        let wav = try WAVFile.read(path: try SpeechVectors.wav("The sea was calm and grey, and nobody on board knew how far the wind would carry them.", voice: "en-us"))
        let one = try Resampler(from: wav.sampleRate, to: rate).process(wav.samples)
        var out: [Int16] = []
        while out.count < rate * seconds { out += one }
        return Array(out.prefix(rate * seconds))
    }

    /// The microphone's signal: the reference's echo plus `near` (the user, or room noise).
    static func microphone(reference: [Int16], near: [Int16], rate: Int) -> [Int16] {
        let delay = rate / 1000 * delayMs
        return (0..<reference.count).map { i in
            let echo = i >= delay ? Double(reference[i - delay]) * leak : 0
            return Int16(clamping: Int(echo + Double(i < near.count ? near[i] : 0)))
        }
    }

    static func cancel(_ canceller: EchoCanceller, microphone: [Int16], reference: [Int16]) throws -> [Int16] {
        var out = [Int16](repeating: 0, count: microphone.count / canceller.frameSamples * canceller.frameSamples)
        let frame = canceller.frameSamples
        for start in stride(from: 0, to: out.count, by: frame) {
            try microphone[start..<(start + frame)].withUnsafeBufferPointer { mic in
                try reference[start..<(start + frame)].withUnsafeBufferPointer { ref in
                    try out[start..<(start + frame)].withUnsafeMutableBufferPointer { try canceller.process(microphone: mic, reference: ref, into: $0) }
                }
            }
        }
        return out
    }

    static func noise(rate: Int, seconds: Int) throws -> [Int16] {
        let wav = try WAVFile.read(path: try SpeechVectors.pinkNoise(seconds: seconds, rate: rate, volume: 0.01))
        return wav.samples
    }

    @Test(arguments: [16_000, 8_000])
    func attenuatesADelayedEchoOnceConverged(rate: Int) throws {
        let canceller = try EchoCanceller(sampleRate: rate, tailMs: 300)
        let reference = try Self.speech(rate: rate, seconds: 12)
        let microphone = Self.microphone(reference: reference, near: try Self.noise(rate: rate, seconds: 12), rate: rate)
        let out = try Self.cancel(canceller, microphone: microphone, reference: reference)
        // The last 4 s, once the filter has had 8 s of speech to learn the path from.
        let tail = (rate * 8)..<out.count
        let attenuation = PCM.dBFS(microphone[tail]) - PCM.dBFS(out[tail])
        // How fast it learns: a reply's first second goes out mostly uncancelled (the gate's case).
        let bySecond = (0..<12).map { s in ((PCM.dBFS(microphone[(s * rate)..<((s + 1) * rate)]) - PCM.dBFS(out[(s * rate)..<((s + 1) * rate)])) * 10).rounded() / 10 }
        print("echo canceller at \(rate) Hz, dB attenuated in each second: \(bySecond)")
        print("echo canceller at \(rate) Hz: \((attenuation * 10).rounded() / 10) dB attenuation of a -10 dB echo 150 ms late, after 8 s")
        #expect(attenuation > 15, "\(attenuation) dB")
    }

    @Test func leavesTheMicrophoneAloneWithoutReference() throws {
        let rate = 16_000
        let canceller = try EchoCanceller(sampleRate: rate)
        let user = try Self.speech(rate: rate, seconds: 4)
        let out = try Self.cancel(canceller, microphone: user, reference: [Int16](repeating: 0, count: user.count))
        let loss = PCM.dBFS(user[..<out.count]) - PCM.dBFS(out)
        #expect(abs(loss) < 1, "\(loss) dB")
    }

    @Test func refusesWhatItCannotDo() throws {
        #expect(throws: EchoCanceller.Failure.unsupportedRate(11_025)) { try EchoCanceller(sampleRate: 11_025) }
        #expect(throws: EchoCanceller.Failure.unsupportedTail(ms: 5_000)) { try EchoCanceller(sampleRate: 16_000, tailMs: 5_000) }
        let canceller = try EchoCanceller(sampleRate: 8_000)
        let short = [Int16](repeating: 0, count: 79)
        var out = [Int16](repeating: 0, count: 80)
        #expect(throws: EchoCanceller.Failure.frameLength(expected: 80, got: 79)) {
            try short.withUnsafeBufferPointer { s in try out.withUnsafeMutableBufferPointer { try canceller.process(microphone: s, reference: s, into: $0) } }
        }
        #expect(canceller.stateBytes > 10_000)
    }
}
