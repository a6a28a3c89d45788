import Codec
import Glibc
import Testing
import TestSupport
@testable import SessionEngine

/// Which phone lines are found noisy (`LineNoiseFloor`): a call as the server hears it, G.711 at
/// 8 kHz, a caller's sentences in many voices and speeds with a second's pause between them, over
/// pink noise at a signal-to-noise ratio, or none.
@Suite struct LineNoiseFloorTests {
    static let sentences = ["How many words are in this sentence?", "I would like to book a table for two at eight tonight.",
                            "Could you tell me when the next train to Leeds leaves?", "My number is four one five, two two three."]

    /// Sentences in espeak-ng's voices at their speeds, and Piper's joe, at 8 kHz.
    static func speech() throws -> [[Int16]] {
        var clips: [[Int16]] = []
        for (n, (voice, speed)) in [("en-us", 150), ("en-gb+f3", 175), ("en-us+m3", 125), ("en-gb-x-rp", 160)].enumerated() {
            let wav = try WAVFile.read(path: try SpeechVectors.wav(sentences[n], voice: voice, wordsPerMinute: speed))
            clips.append(try Resampler(from: wav.sampleRate, to: 8_000).process(wav.samples))
        }
        let joe = try WAVFile.read(path: try SpeechVectors.piper(sentences[1], lengthScale: 1.2))
        clips.append(try Resampler(from: joe.sampleRate, to: 8_000).process(joe.samples))
        return clips
    }

    /// The call: each clip, then a second of the line alone; noise at `snrDB` under the speech's
    /// RMS (nil: none), through µ-law and back. How many 20 ms frames it took to be found noisy
    /// (nil: never).
    static func framesToNoisy(_ clips: [[Int16]], snrDB: Double?) throws -> Int? {
        var call: [Int16] = []
        for clip in clips { call += clip + [Int16](repeating: 0, count: 8_000) }
        let speech = call.filter { abs($0) > 300 }.map { Double($0) * Double($0) }
        let speechRMS = (speech.reduce(0, +) / Double(max(1, speech.count))).squareRoot()
        if let snrDB {
            let noise = try WAVFile.read(path: try SpeechVectors.pinkNoise(seconds: 40, rate: 8_000)).samples.map(Double.init)
            let noiseRMS = (noise.reduce(0) { $0 + $1 * $1 } / Double(noise.count)).squareRoot()
            let gain = speechRMS / pow(10, snrDB / 20) / noiseRMS
            call = call.enumerated().map { Int16(clamping: Int(Double($1) + noise[$0 % noise.count] * gain)) }
        }
        let line = G711.decode(G711.encode(call, .muLaw), .muLaw)
        var floor = LineNoiseFloor(sampleRate: 8_000)
        for (frame, start) in stride(from: 0, to: line.count - 160, by: 160).enumerated() where floor.heard(Array(line[start..<(start + 160)])) {
            return frame + 1
        }
        return nil
    }

    @Test func aLineWithNoiseTenDBUnderTheSpeechIsFoundNoisyWithinItsFirstSeconds() throws {
        let clips = try Self.speech()
        for snr in [10.0, 15] {
            let frames = try Self.framesToNoisy(clips, snrDB: snr)
            print("LineNoiseFloor: pink noise at \(Int(snr)) dB SNR found noisy after \(frames.map { "\($0 * 20) ms" } ?? "never")")
            #expect(frames != nil && frames! <= 5 * 50, "pink noise at \(snr) dB SNR: \(frames.map { "\($0 * 20) ms" } ?? "never")")
        }
        // Each voice alone, too: the rule does not lean on one speaker's pauses.
        for (n, clip) in clips.enumerated() {
            #expect(try Self.framesToNoisy([clip, clip, clip], snrDB: 10) != nil, "voice \(n) at 10 dB SNR")
        }
    }

    @Test func aCleanLineOrAQuietRoomIsNeverDenoised() throws {
        let clips = try Self.speech()
        for snr in [nil, 40.0, 30] {
            #expect(try Self.framesToNoisy(clips, snrDB: snr) == nil, "SNR \(snr.map { "\($0) dB" } ?? "none")")
        }
        // Speech without a pause between the sentences: its own gaps are the floor.
        var floor = LineNoiseFloor(sampleRate: 8_000)
        let solid = G711.decode(G711.encode(clips.flatMap { $0 }, .muLaw), .muLaw)
        let turned = floor.heard(solid)
        #expect(!turned && !floor.isNoisy)
    }

    @Test func itAnswersOnceAndStaysNoisy() {
        var floor = LineNoiseFloor(sampleRate: 8_000)
        let loud = [Int16](repeating: 1_000, count: 160)   // -30 dBFS, every frame
        var turned = 0
        for _ in 0..<(10 * 50) where floor.heard(loud) { turned += 1 }
        #expect(turned == 1 && floor.isNoisy)
        let again = floor.heard([Int16](repeating: 0, count: 8_000))
        #expect(!again && floor.isNoisy)
    }

    @Test func aLoudSecondBetweenQuietOnesDoesNotCount() {
        var floor = LineNoiseFloor(sampleRate: 8_000)
        let loud = [Int16](repeating: 1_000, count: 8_000), quiet = [Int16](repeating: 10, count: 8_000)
        for _ in 0..<5 {
            let turned = [floor.heard(loud), floor.heard(loud), floor.heard(quiet)]
            #expect(turned == [false, false, false])
        }
        let third = floor.heard(loud + loud + loud)
        #expect(third)
    }
}
