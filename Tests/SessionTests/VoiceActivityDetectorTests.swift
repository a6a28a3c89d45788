import Codec
import Testing
import Session
import TestSupport
import SessionEngine

@Suite struct VoiceActivityDetectorTests {
    static let sentences = [
        "Please tell me what twelve times seven is.",
        "Hello there, how are you doing today?",
        "Summarize what I said so far.",
    ]

    /// Prefix padding 0, so the reported start is the detected start itself.
    private func detect(_ samples: [Int16], rate: Int = 16_000, chunkSamples: Int = 320,
                        settings: VoiceActivityDetector.Settings = .init(prefixPaddingMs: 0)) -> [VoiceActivityDetector.Event] {
        var vad = VoiceActivityDetector(sampleRate: rate, settings: settings)
        var events: [VoiceActivityDetector.Event] = []
        for start in stride(from: 0, to: samples.count, by: chunkSamples) {
            events += vad.process(samples[start..<min(samples.count, start + chunkSamples)])
        }
        return events
    }

    private func expectOneTurn(_ clip: SpeechClip, _ events: [VoiceActivityDetector.Event], _ label: String) {
        guard events.count == 2, case .speechStarted(let start) = events[0], case .speechStopped(let stop) = events[1] else {
            Issue.record("\(label): expected one start and one stop, got \(events)")
            return
        }
        #expect(abs(start - clip.speechStartMs) <= 150, "\(label): start \(start) ms, speech began at \(clip.speechStartMs) ms")
        #expect(abs(stop - clip.speechEndMs) <= 150, "\(label): stop \(stop) ms, speech ended at \(clip.speechEndMs) ms")
    }

    @Test(arguments: sentences)
    func cleanSpeechGivesOneTurnWithin150msOfItsBoundaries(sentence: String) throws {
        let clip = try SpeechClip.make(sentence)
        expectOneTurn(clip, detect(clip.samples), "clean")
    }

    @Test(arguments: sentences)
    func speechOverQuietNoiseGivesOneTurnWithin150ms(sentence: String) throws {
        let clip = try SpeechClip.make(sentence, noiseDBFS: -50)
        expectOneTurn(clip, detect(clip.samples), "-50 dBFS noise")
    }

    @Test(arguments: sentences)
    func speechOverLoudNoiseGivesOneTurnWithin150ms(sentence: String) throws {
        let clip = try SpeechClip.make(sentence, noiseDBFS: -35)
        expectOneTurn(clip, detect(clip.samples), "-35 dBFS noise")
    }

    @Test(arguments: [-50.0, -35.0, -20.0])
    func steadyNoiseAloneIsNotSpeech(dBFS: Double) {
        #expect(detect(SpeechClip.noise(ms: 5000, dBFS: dBFS, seed: 3)).isEmpty)
    }

    @Test func chunkSizeDoesNotChangeTheResult() throws {
        let clip = try SpeechClip.make(Self.sentences[0], noiseDBFS: -50)
        let whole = detect(clip.samples, chunkSamples: clip.samples.count)
        #expect(whole.count == 2)
        for size in [1, 7, 160, 333, 4800] { #expect(detect(clip.samples, chunkSamples: size) == whole, "chunks of \(size)") }
    }

    @Test func startIsReportedEarlierByThePrefixPaddingButNotBelowZero() throws {
        let clip = try SpeechClip.make(Self.sentences[0])
        guard case .speechStarted(let unpadded) = detect(clip.samples).first else { Issue.record("no start"); return }
        let padded = detect(clip.samples, settings: .init(prefixPaddingMs: 300))
        #expect(padded.first == .speechStarted(atMs: unpadded - 300))
        let early = try SpeechClip.make(Self.sentences[0], silenceMs: 100)
        #expect(detect(early.samples, settings: .init(prefixPaddingMs: 300)).first == .speechStarted(atMs: 0))
    }

    @Test func stopWaitsForTheSilenceDuration() throws {
        let clip = try SpeechClip.make(Self.sentences[0])
        var vad = VoiceActivityDetector(settings: .init(prefixPaddingMs: 0, silenceDurationMs: 800))
        let speechEndSample = clip.speechEndMs * 16
        // Up to 700 ms after the speech: started, not stopped.
        let before = vad.process(clip.samples[..<(speechEndSample + 700 * 16)])
        #expect(before.count == 1)
        let after = vad.process(clip.samples[(speechEndSample + 700 * 16)...])
        guard case .speechStopped(let at)? = after.first else { Issue.record("no stop: \(after)"); return }
        #expect(abs(at - clip.speechEndMs) <= 150)
    }

    @Test func clicksShorterThanTheOnsetAreIgnored() {
        var samples = [Int16](repeating: 0, count: 16_000)
        // 20 ms of full-scale square wave: two loud frames.
        for i in 8000..<8320 { samples[i] = i % 20 < 10 ? 20_000 : -20_000 }
        #expect(detect(samples).isEmpty)
    }

    @Test func higherThresholdNeedsLouderSpeech() throws {
        let clip = try SpeechClip.make(Self.sentences[0])
        // 36 dB down (peaks near -48 dBFS) over -60 dBFS noise: about 12 dB above the floor.
        let quiet = clip.samples.map { Int16(Int($0) / 64) }
        let noisy = SpeechClip.mixNoise(into: quiet, dBFS: -60, seed: 9)
        #expect(!detect(noisy, settings: .init(threshold: 0, prefixPaddingMs: 0)).isEmpty)
        #expect(detect(noisy, settings: .init(threshold: 1, prefixPaddingMs: 0)).isEmpty)
    }

    @Test func thresholdMapsLinearlyFrom3To23Decibels() {
        #expect(VoiceActivityDetector.Settings(threshold: 0).startMarginDB == 3)
        #expect(VoiceActivityDetector.Settings(threshold: 0.5).startMarginDB == 13)
        #expect(VoiceActivityDetector.Settings(threshold: 1).startMarginDB == 23)
        #expect(VoiceActivityDetector.Settings(threshold: 0.5).continueMarginDB == 6.5)
    }

    @Test func noiseThatStartsAfterDigitalSilenceIsLearnedWithinTwoSeconds() {
        // A microphone that sends zeros before it opens: the floor starts at nothing, so the noise
        // at first looks loud; the 2-second minimum catches up and the "turn" ends.
        let samples = [Int16](repeating: 0, count: 16_000) + SpeechClip.noise(ms: 6000, dBFS: -35, seed: 5)
        let events = detect(samples)
        #expect(events.count <= 2)
        if case .speechStopped(let at)? = events.last { #expect(at <= 1000 + 2500) }
        #expect(events.count % 2 == 0, "a turn that starts in the noise must end: \(events)")
    }

    // MARK: 8 kHz, the telephone's rate

    @Test(arguments: sentences)
    func speechAt8kHzGivesOneTurnWithin150ms(sentence: String) throws {
        let clean = try SpeechClip.make(sentence, rate: 8000)
        expectOneTurn(clean, detect(clean.samples, rate: 8000, chunkSamples: 160), "clean, 8 kHz")
        let noisy = try SpeechClip.make(sentence, noiseDBFS: -35, rate: 8000)
        expectOneTurn(noisy, detect(noisy.samples, rate: 8000, chunkSamples: 160), "-35 dBFS noise, 8 kHz")
    }

    /// What a caller sounds like through Twilio: 8 kHz speech over line noise, µ-law both ways.
    @Test(arguments: sentences)
    func muLawSpeechAt8kHzGivesOneTurnWithin150ms(sentence: String) throws {
        let clip = try SpeechClip.make(sentence, noiseDBFS: -50, rate: 8000)
        let line = G711.decode(G711.encode(clip.samples, .muLaw), .muLaw)
        expectOneTurn(clip, detect(line, rate: 8000, chunkSamples: 160), "µ-law, 8 kHz")
    }

    /// The detector finds the same turn at either rate: its frames are 10 ms at both.
    @Test func eightAndSixteenKilohertzAgreeWithin20ms() throws {
        for sentence in Self.sentences {
            let wide = detect(try SpeechClip.make(sentence, noiseDBFS: -50).samples)
            let narrow = detect(try SpeechClip.make(sentence, noiseDBFS: -50, rate: 8000).samples, rate: 8000)
            guard wide.count == 2, narrow.count == 2, case .speechStarted(let a) = wide[0], case .speechStarted(let b) = narrow[0],
                  case .speechStopped(let c) = wide[1], case .speechStopped(let d) = narrow[1] else {
                Issue.record("\(sentence): 16 kHz \(wide), 8 kHz \(narrow)")
                continue
            }
            #expect(abs(a - b) <= 20 && abs(c - d) <= 20, "\(sentence): 16 kHz \(wide), 8 kHz \(narrow)")
        }
    }

    @Test(arguments: [-50.0, -35.0, -20.0])
    func steadyNoiseAloneIsNotSpeechAt8kHz(dBFS: Double) {
        #expect(detect(SpeechClip.noise(ms: 5000, dBFS: dBFS, seed: 3, rate: 8000), rate: 8000).isEmpty)
    }

    @Test func endSpeechForgetsTheTurnWithoutAStop() throws {
        let clip = try SpeechClip.make(Self.sentences[0])
        var vad = VoiceActivityDetector(settings: .init(prefixPaddingMs: 0))
        let half = (clip.speechStartMs + clip.speechEndMs) / 2 * 16
        #expect(vad.process(clip.samples[..<half]).count == 1)
        #expect(vad.isSpeaking)
        vad.endSpeech()
        #expect(!vad.isSpeaking)
        // The rest of the sentence starts a new turn, which then ends.
        let rest = vad.process(clip.samples[half...])
        #expect(rest.count == 2)
    }
}
