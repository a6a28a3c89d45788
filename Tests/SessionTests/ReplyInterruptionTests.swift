import Testing
@testable import Session
@testable import SessionEngine

/// The turn-taking rule during a spoken reply, as a value: speech pauses the reply, and becomes a
/// barge-in only after 500 ms of speech, a word that asks for the floor, or three words that are
/// not backchannels.
@Suite struct ReplyInterruptionTests {
    static let defaults = ReplyInterruption.Settings()

    static func paused(_ settings: ReplyInterruption.Settings = defaults) throws -> ReplyInterruption {
        let (machine, decision) = ReplyInterruption.speechStarted(during: .spoken, interruptResponse: true, settings: settings)
        #expect(decision == .pause)
        return try #require(machine)
    }

    @Test func speechThatEndsAfter300msResumesTheReply() throws {
        let m = try Self.paused()
        for ms in stride(from: 20, through: 300, by: 20) { #expect(m.heard(speechMs: ms) == nil) }
        #expect(m.speechStopped() == .resume(.short))
    }

    @Test func speechThatReaches500msBargesIn() throws {
        let m = try Self.paused()
        #expect(m.heard(speechMs: 480) == nil)
        #expect(m.heard(speechMs: 500) == .bargeIn)
    }

    @Test func backchannelWordsKeepTheReplyPausedAndThenResumeIt() throws {
        var m = try Self.paused()
        #expect(m.recognised("uh huh") == nil)
        // A long "uh huh" is still a backchannel: the duration alone does not cut the reply.
        #expect(m.heard(speechMs: 800) == nil)
        #expect(m.speechStopped() == .resume(.backchannel))
    }

    @Test(arguments: ["stop", "okay wait", "No, no.", "Actually, I meant Paris", "okay but wait", "Hold on", "Sorry?"])
    func aWordThatAsksForTheFloorBargesInBefore500ms(text: String) throws {
        var m = try Self.paused()
        #expect(m.heard(speechMs: 200) == nil)
        #expect(m.recognised(text) == .bargeIn, "\(text)")
    }

    /// What Whisper tiny.en made of backchannels in the trials, and the like: one or two
    /// stray words are not an interruption.
    @Test(arguments: ["I'm home.", "Hmm, hmm.", "Mmm.", "Okay.", "M-M-H-M", "MCHM.", "MMH.", "And then.", "Uh-huh.", "Mm-hmm.", "I see.", "Got it.", "Right.", "Sure.", "yeah", "Oh, OK.", "Ma'am."])
    func aMisheardBackchannelDoesNotBargeIn(text: String) throws {
        var m = try Self.paused()
        #expect(m.recognised(text) == nil, "\(text)")
        #expect(m.speechStopped() != .bargeIn)
    }

    @Test func interruptResponseFalseNeverPauses() {
        for reply in [ReplyInterruption.Reply.none, .text, .spoken] {
            let (machine, decision) = ReplyInterruption.speechStarted(during: reply, interruptResponse: false, settings: Self.defaults)
            #expect(machine == nil && decision == nil)
        }
    }

    @Test func aTextReplyOrAZeroDurationBargesInAtOnce() {
        #expect(ReplyInterruption.speechStarted(during: .text, interruptResponse: true, settings: Self.defaults).1 == .bargeIn)
        let immediate = ReplyInterruption.Settings(minDurationMs: 0, minWords: 1)
        #expect(ReplyInterruption.speechStarted(during: .spoken, interruptResponse: true, settings: immediate).1 == .bargeIn)
        #expect(ReplyInterruption.speechStarted(during: .none, interruptResponse: true, settings: Self.defaults).1 == nil)
    }

    @Test func minWordsCountsOnlyWordsThatAreNotBackchannels() throws {
        var m = try Self.paused(.init(minDurationMs: 2000, minWords: 3))
        #expect(m.recognised("yeah right maybe") == nil)
        #expect(m.recognised("yeah right maybe tell me more") == .bargeIn)
        var words = try Self.paused(.init(minDurationMs: 500, minWords: 0))
        #expect(words.recognised("stop") == nil)
        #expect(words.heard(speechMs: 500) == .bargeIn)
    }

    @Test(arguments: [
        ("uh-huh", 0, 1), ("Uh huh.", 0, 1), ("mm-hmm", 0, 1), ("Mhm", 0, 1), ("okay", 0, 1), ("OK!", 0, 1), ("yeah, yeah", 0, 2),
        ("I see", 0, 1), ("aha", 0, 1), ("sure, right", 0, 2), ("stop", 1, 0), ("wait, actually I meant Paris", 5, 0), ("yes please", 1, 1), ("", 0, 0),
    ])
    func backchannelsAreToldFromWords(text: String, words: Int, backchannels: Int) {
        let counted = ReplyInterruption.count(text)
        #expect(counted.words == words && counted.backchannels == backchannels, "\(text)")
    }
}

/// With a recogniser: a speech nothing has been recognised of yet waits for its words up to twice
/// the duration; a recognised backchannel still vetoes, a word still barges in at once.
@Suite struct ReplyInterruptionWithWordsTests {
    @Test func unrecognisedSpeechWaitsForWordsUpToThreeTimesTheDuration() throws {
        let (started, decision) = ReplyInterruption.speechStarted(during: .spoken, interruptResponse: true, settings: .init(), expectsWords: true)
        var machine = try #require(started)
        #expect(decision == .pause)
        #expect(machine.heard(speechMs: 1_000) == nil)
        #expect(machine.heard(speechMs: 1_500) == .bargeIn)
        #expect(machine.recognised("stop") == .bargeIn)
    }

    @Test func strayWordsWaitForTheDurationToo() throws {
        var machine = try #require(ReplyInterruption.speechStarted(during: .spoken, interruptResponse: true, settings: .init(), expectsWords: true).0)
        #expect(machine.recognised("I'm home") == nil)
        #expect(machine.heard(speechMs: 800) == nil)
        #expect(machine.speechStopped() == .resume(.short))
    }

    @Test func aRecognisedBackchannelStillVetoesTheDuration() throws {
        var machine = try #require(ReplyInterruption.speechStarted(during: .spoken, interruptResponse: true, settings: .init(), expectsWords: true).0)
        #expect(machine.recognised("Mm-hmm.") == nil)
        #expect(machine.heard(speechMs: 1_500) == nil)
        #expect(machine.speechStopped() == .resume(.backchannel))
    }
}
