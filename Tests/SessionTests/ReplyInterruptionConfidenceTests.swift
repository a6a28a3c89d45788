import Testing
@testable import SessionEngine
@testable import SpeechContracts

/// The paused reply's rule weighing the decode's confidence: Whisper tiny.en's words for hums and
/// for real interruptions, with the confidence it gave them, as measured in docs/benchmarks.md
/// ("Backchannels and the decode's confidence": espeak-ng, flite and Piper voices at 0.85, 1 and
/// 1.25 times their pace). Without the confidence every hum below cut the reply.
@Suite struct ReplyInterruptionConfidenceTests {
    static func paused() throws -> ReplyInterruption {
        let (machine, _) = ReplyInterruption.speechStarted(during: .spoken, interruptResponse: true, settings: .init(),
                                                           expectsWords: true, settledWords: .decode)
        return try #require(machine)
    }

    /// (what was said, what Whisper wrote, its average log-probability, its no-speech probability)
    static let hums: [(said: String, heard: String, logProbability: Double, noSpeech: Double)] = [
        ("mm hmm (espeak-ng en-gb+f3)", "And then, boom.", -0.95, 0.26),
        ("mm hmm (espeak-ng en+m3, 0.85)", "And then them.", -0.88, 0.25),
        ("mm hmm (espeak-ng en+m3)", "And then them.", -0.63, 0.34),
        ("mhm (espeak-ng en-us)", "And make him...", -0.79, 0.23),
        ("uh huh (flite rms)", "That's my idea.", -0.92, 0.29),
        ("mhm (flite awb)", "and nature and", -0.89, 0.17),
        ("mm hmm (flite kal, 1.25)", "Then I may jump.", -0.93, 0.24),
        ("mm hmm (flite rms, 1.25)", "And then make some then.", -0.67, 0.11),
        ("uh huh (flite awb)", "No, no.", -0.83, 0.51),
        ("uh huh (flite awb, 1.25)", "No, no.", -0.84, 0.59),
        ("uh huh (flite awb), a partial over a reply", "No.", -0.95, 0.437),
        ("mhm (Piper joe, 1.25)", "and make some.", -0.63, 0.11),
    ]

    static let interruptions: [(said: String, heard: String, logProbability: Double, noSpeech: Double)] = [
        ("stop (flite rms, 0.85)", "Stop.", -0.91, 0.11),
        ("stop (espeak-ng en-gb+f3, 1.25)", "Stop.", -0.37, 0.56),
        ("no no no (espeak-ng en+m3, 1.25)", "No no no.", -0.61, 0.53),
        ("hold on a second (espeak-ng en-gb+f3)", "Hold on a second.", -0.70, 0.15),
        ("actually I meant Tuesday (espeak-ng en+m3)", "Actually, I meant Tuesday.", -0.74, 0.23),
        ("that is not what I asked (espeak-ng en-gb+f3, 1.25)", "That is not what I asked.", -0.54, 0.41),
        ("can you say that again (espeak-ng en-gb+f3)", "Can you say that again?", -0.32, 0.30),
    ]

    @Test(arguments: hums.indices)
    func aHumWrittenAsWordsDoesNotCutTheReply(index: Int) throws {
        let hum = Self.hums[index]
        var m = try Self.paused()
        let sure = DecodeConfidence(averageLogProbability: hum.logProbability, noSpeechProbability: hum.noSpeech)
        #expect(m.recognised(hum.heard, confidence: sure) == nil, "\(hum.said)")
        // Decided by its length, as a noise is: a hum is over long before 1.5 s.
        #expect(m.heard(speechMs: 900) == nil)
        if case .resume = m.speechStopped() {} else { Issue.record("\(hum.said): not resumed") }
        // Without the confidence, the same words cut it.
        var blind = try Self.paused()
        #expect(blind.recognised(hum.heard) == .bargeIn, "\(hum.said)")
    }

    @Test(arguments: interruptions.indices)
    func aRealInterruptionStillCutsTheReply(index: Int) throws {
        let said = Self.interruptions[index]
        var m = try Self.paused()
        let confidence = DecodeConfidence(averageLogProbability: said.logProbability, noSpeechProbability: said.noSpeech)
        #expect(m.recognised(said.heard, confidence: confidence) == .bargeIn, "\(said.said)")
    }

    @Test func unsureWordsLeaveTheDurationRuleToDecide() throws {
        let m0 = try Self.paused()
        var m = m0
        let unsure = DecodeConfidence(averageLogProbability: -1.2, noSpeechProbability: 0.2)
        #expect(m.recognised("and then we went to the market", confidence: unsure) == nil)
        #expect(m.words == 0 && m.backchannels == 0)
        // Speech that goes on past three times the minimum is a barge-in whatever its words.
        #expect(m.heard(speechMs: 1_499) == nil)
        #expect(m.heard(speechMs: 1_500) == .bargeIn)
    }

    @Test func aBackchannelHeardUnsureIsStillABackchannel() throws {
        var m = try Self.paused()
        let unsure = DecodeConfidence(averageLogProbability: -0.9, noSpeechProbability: 0.3)
        #expect(m.recognised("Uh huh.", confidence: unsure) == nil)
        #expect(m.speechStopped() == .resume(.backchannel))
    }

    /// Through a G.711 line (`make bench-backchannels --line g711`), Whisper wrote real floor words
    /// right but unsure, with a no-speech probability the 16 kHz rule takes for a hum's: on a phone
    /// line they count whatever the confidence.
    static let phoneLineFloorWords: [(said: String, heard: String, logProbability: Double, noSpeech: Double)] = [
        ("stop (espeak-ng en-gb+f3, 0.85)", "Stop.", -0.99, 0.47), ("stop (flite slt, 1.25)", "Stop.", -0.97, 0.36),
        ("wait (espeak-ng en-us, 1.25)", "Wait.", -0.78, 0.49), ("wait (espeak-ng en+m3)", "Wait.", -0.78, 0.42),
    ]

    @Test(arguments: phoneLineFloorWords.indices)
    func onAPhoneLineAnUnsureFloorWordStillCuts(index: Int) throws {
        let said = Self.phoneLineFloorWords[index]
        let confidence = DecodeConfidence(averageLogProbability: said.logProbability, noSpeechProbability: said.noSpeech)
        let (machine, _) = ReplyInterruption.speechStarted(during: .spoken, interruptResponse: true, settings: .init(),
                                                           expectsWords: true, settledWords: .decode, narrowband: true)
        var phone = try #require(machine)
        #expect(phone.recognised(said.heard, confidence: confidence) == .bargeIn, "\(said.said)")
        // At 16 kHz the same decode is taken for a hum written as a floor word.
        var microphone = try Self.paused()
        #expect(microphone.recognised(said.heard, confidence: confidence) == nil, "\(said.said)")
    }
}
