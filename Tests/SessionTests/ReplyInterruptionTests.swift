import Testing
@testable import Session

/// The turn-taking rule during a spoken reply, as a value: speech pauses the reply, and becomes a
/// barge-in only after 500 ms of speech or a recognised word that is not a backchannel.
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

    @Test func aWordThatIsNotABackchannelBargesInBefore500ms() throws {
        var m = try Self.paused()
        #expect(m.heard(speechMs: 200) == nil)
        #expect(m.recognised("stop") == .bargeIn)
        var n = try Self.paused()
        #expect(n.recognised("okay wait") == .bargeIn)
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
        #expect(m.recognised("yeah right no") == nil)
        #expect(m.recognised("yeah right no wait please") == .bargeIn)
        var words = try Self.paused(.init(minDurationMs: 500, minWords: 0))
        #expect(words.recognised("stop") == nil)
        #expect(words.heard(speechMs: 500) == .bargeIn)
    }

    @Test(arguments: [
        ("uh-huh", 0, 1), ("Uh huh.", 0, 1), ("mm-hmm", 0, 1), ("Mhm", 0, 1), ("okay", 0, 1), ("OK!", 0, 1), ("yeah, yeah", 0, 2),
        ("I see", 0, 1), ("aha", 0, 1), ("sure, right", 0, 2), ("stop", 1, 0), ("wait, actually I meant Paris", 5, 0), ("yes please", 1, 1), ("", 0, 0),
    ])
    func backchannelsAreToldFromWords(text: String, words: Int, backchannels: Int) {
        #expect(ReplyInterruption.count(text) == (words, backchannels))
    }
}

/// With a recogniser: a speech nothing has been recognised of yet waits for its words up to twice
/// the duration; a recognised backchannel still vetoes, a word still barges in at once.
@Suite struct ReplyInterruptionWithWordsTests {
    @Test func unrecognisedSpeechWaitsForWordsUpToTwiceTheDuration() throws {
        let (started, decision) = ReplyInterruption.speechStarted(during: .spoken, interruptResponse: true, settings: .init(), expectsWords: true)
        var machine = try #require(started)
        #expect(decision == .pause)
        #expect(machine.heard(speechMs: 600) == nil)
        #expect(machine.heard(speechMs: 1_000) == .bargeIn)
        #expect(machine.recognised("stop") == .bargeIn)
    }

    @Test func aRecognisedBackchannelStillVetoesTheDuration() throws {
        var machine = try #require(ReplyInterruption.speechStarted(during: .spoken, interruptResponse: true, settings: .init(), expectsWords: true).0)
        #expect(machine.recognised("Mm-hmm.") == nil)
        #expect(machine.heard(speechMs: 1_500) == nil)
        #expect(machine.speechStopped() == .resume(.backchannel))
    }
}
