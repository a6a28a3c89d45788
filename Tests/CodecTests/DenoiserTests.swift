import Codec
import Glibc
import Testing
import TestSupport

/// The denoiser against known noise: espeak-ng speech with 3 s of white noise before it and 1.5 s
/// after, the noise 5 dB below the speech. What it leaves of the noise where nobody speaks, and
/// of the speech where someone does, is measured against the input.
struct DenoiserTests {
    static let leadSeconds = 3.0
    static let tailSeconds = 1.5
    static let snrDB = 5.0

    /// The clean speech at `rate`, and the noisy signal: noise, speech over noise, noise.
    static func signals(rate: Int) throws -> (speech: [Int16], noisy: [Int16], speechRange: Range<Int>) {
        let wav = try WAVFile.read(path: try SpeechVectors.wav("The quick brown fox jumps over the lazy dog near the river bank.", voice: "en-us"))
        let speech = try Resampler(from: wav.sampleRate, to: rate).process(wav.samples)
        let lead = Int(Self.leadSeconds * Double(rate))
        let total = lead + speech.count + Int(Self.tailSeconds * Double(rate))
        // White noise at the level 5 dB under the speech's RMS (uniform: RMS = amplitude / √3).
        let noiseRMS = PCM.rms(speech) * 32768 * pow(10, -Self.snrDB / 20)
        let amplitude = noiseRMS * 3.0.squareRoot()
        var random = SeededRandom(seed: 25)
        let noisy = (0..<total).map { i in
            let s = i >= lead && i < lead + speech.count ? Double(speech[i - lead]) : 0
            return Int16(clamping: Int((s + Double.random(in: -amplitude...amplitude, using: &random)).rounded()))
        }
        return (speech, noisy, lead..<(lead + speech.count))
    }

    static func denoise(_ input: [Int16], _ denoiser: Denoiser, piece: Int) -> [Int16] {
        // In uneven pieces, as audio arrives, so that the frames straddle them.
        var out: [Int16] = []
        for start in stride(from: 0, to: input.count, by: piece) {
            out += denoiser.process(Array(input[start..<min(start + piece, input.count)]))
        }
        return out + denoiser.flush()
    }

    @Test(arguments: [(Denoiser.Kind.nearField, 16_000), (.farField, 16_000), (.nearField, 8_000), (.farField, 8_000)])
    func quietensNoiseAndKeepsSpeech(kind: Denoiser.Kind, rate: Int) throws {
        let (speech, noisy, speechRange) = try Self.signals(rate: rate)
        let denoiser = try Denoiser(kind: kind, sampleRate: rate)
        let out = Self.denoise(noisy, denoiser, piece: rate / 1000 * 37)
        #expect(out.count == noisy.count)
        // Noise only: the last second of the lead (before it the noise estimate is still settling:
        // speexdsp learns the floor over a second or two), and the tail, 300 ms after the speech.
        let lead = (speechRange.lowerBound - rate)..<speechRange.lowerBound
        let tail = (speechRange.upperBound + rate * 3 / 10)..<noisy.count
        let leadDrop = PCM.dBFS(noisy[lead]) - PCM.dBFS(out[lead])
        let tailDrop = PCM.dBFS(noisy[tail]) - PCM.dBFS(out[tail])
        let speechChange = PCM.dBFS(out[speechRange]) - PCM.dBFS(speech)
        print("denoiser \(kind.rawValue) at \(rate) Hz: noise \(Int(leadDrop)) dB / \(Int(tailDrop)) dB quieter, speech \(((speechChange * 10).rounded()) / 10) dB")
        let wanted = kind == .nearField ? 10.0 : 15.0
        #expect(leadDrop >= wanted)
        #expect(tailDrop >= wanted)
        #expect(abs(speechChange) <= 3)
    }

    @Test func farFieldTakesMoreOffThanNearField() throws {
        let (_, noisy, speechRange) = try Self.signals(rate: 16_000)
        let near = Self.denoise(noisy, try Denoiser(kind: .nearField, sampleRate: 16_000), piece: 320)
        let far = Self.denoise(noisy, try Denoiser(kind: .farField, sampleRate: 16_000), piece: 320)
        let tail = (speechRange.upperBound + 4_800)..<noisy.count
        #expect(PCM.dBFS(far[tail]) < PCM.dBFS(near[tail]) - 5)
    }

    @Test func holdsWhatIsShortOfAFrameForTheNextCall() throws {
        let denoiser = try Denoiser(kind: .nearField, sampleRate: 16_000)
        #expect(denoiser.process([Int16](repeating: 100, count: 300)).isEmpty)
        #expect(denoiser.process([Int16](repeating: 100, count: 300)).count == 320)
        #expect(denoiser.flush().count == 280)
        #expect(denoiser.flush().isEmpty)
    }

    @Test func badFrameLengthOrRateIsATypedError() throws {
        let denoiser = try Denoiser(kind: .farField, sampleRate: 8_000)
        var frame = [Int16](repeating: 0, count: 159)
        #expect(throws: Denoiser.Failure.frameLength(expected: 160, got: 159)) {
            try frame.withUnsafeMutableBufferPointer { try denoiser.denoise(frame: $0) }
        }
        #expect(throws: Denoiser.Failure.unsupportedRate(44_100)) { try Denoiser(kind: .nearField, sampleRate: 44_100) }
        var whole = [Int16](repeating: 0, count: 160)
        try whole.withUnsafeMutableBufferPointer { try denoiser.denoise(frame: $0) }
    }
}
