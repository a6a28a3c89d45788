import JSON
import Models
import Testing
@testable import parley_load

/// `survive`'s rules, without sockets: the tool turn across resumes, the truncation checks, the
/// close codes, the tenant's timeline, the spoken clips' pieces, and the tenant's key on the wire.
@Suite struct SurviveToolTurnTests {
    typealias Step = SurviveToolTurn.Step

    @Test func aCallIsAnsweredWithItsOutputThenAResponseAndTheTurnEndsWithoutACall() {
        var turn = SurviveToolTurn(outputPrefix: "o1t3")
        let first = turn.responseDone(callIDs: ["call_a"])
        #expect(first == [.sendOutput(callID: "call_a", outputID: "o1t3c1", again: false), .createResponse])
        #expect(turn.awaitingReply && !turn.finished)
        let seen = turn.acknowledged("o1t3c1")
        #expect(seen)
        turn.responseCreated()
        let last = turn.responseDone(callIDs: [])
        #expect(last.isEmpty)
        #expect(turn.finished && turn.answered == 1)
    }

    @Test func parallelCallsGetOneOutputEachAndOneResponseCreate() {
        var turn = SurviveToolTurn(outputPrefix: "o")
        let steps = turn.responseDone(callIDs: ["a", "b"])
        #expect(steps == [.sendOutput(callID: "a", outputID: "oc1", again: false), .sendOutput(callID: "b", outputID: "oc2", again: false), .createResponse])
    }

    @Test func anAnswerWithoutACallEndsTheTurnAtOnce() {
        var turn = SurviveToolTurn(outputPrefix: "o")
        let steps = turn.responseDone(callIDs: [])
        #expect(steps.isEmpty && turn.finished && turn.calls.isEmpty)
        let again = turn.resumed()
        #expect(again.isEmpty)
    }

    @Test func anOutputTheReplayDidNotAcknowledgeIsSentAgainOnce() {
        var turn = SurviveToolTurn(outputPrefix: "o")
        _ = turn.responseDone(callIDs: ["a"])
        // The drop came before the server had it: the replay held no conversation.item.added for it.
        let afterDrop = turn.resumed()
        #expect(afterDrop == [.sendOutput(callID: "a", outputID: "oc1", again: true), .createResponse])
        let seen = turn.acknowledged("oc1")
        let seenAgain = turn.acknowledged("oc1")
        #expect(seen && !seenAgain, "an acknowledgement counts once")
        turn.responseCreated()
        let afterSecondDrop = turn.resumed()
        #expect(afterSecondDrop.isEmpty, "acknowledged, its reply begun: nothing is sent twice")
    }

    @Test func callsSeenInAReplayAreAnsweredAtItsEndForTheFirstTime() {
        var turn = SurviveToolTurn(outputPrefix: "o")
        let inReplay = turn.responseDone(callIDs: ["a"], replaying: true)
        #expect(inReplay.isEmpty && !turn.finished)
        let atItsEnd = turn.resumed()
        #expect(atItsEnd == [.sendOutput(callID: "a", outputID: "oc1", again: false), .createResponse])
    }

    @Test func anAcknowledgedOutputWhoseReplyNeverBeganGetsOnlyAResponseCreate() {
        var turn = SurviveToolTurn(outputPrefix: "o")
        _ = turn.responseDone(callIDs: ["a"])
        _ = turn.acknowledged("oc1")
        let afterDrop = turn.resumed()
        #expect(afterDrop == [.createResponse])
    }

    @Test func aCallAlreadyAnsweredIsNotAnsweredAgainWhenItsResponseDoneComesTwice() {
        var turn = SurviveToolTurn(outputPrefix: "o")
        _ = turn.responseDone(callIDs: ["a"])
        _ = turn.acknowledged("oc1")
        let again = turn.responseDone(callIDs: ["a"])
        #expect(again.isEmpty && turn.calls.count == 1)
    }

    @Test func aModelThatKeepsCallingIsGivenUpOn() {
        var turn = SurviveToolTurn(outputPrefix: "o")
        for i in 0..<SurviveToolTurn.maxCalls {
            let steps = turn.responseDone(callIDs: ["c\(i)"])
            #expect(steps.count == 2)
            _ = turn.acknowledged("oc\(i + 1)")
        }
        let last = turn.responseDone(callIDs: ["one more"])
        #expect(last.isEmpty && turn.finished && turn.gaveUp)
    }

    /// What `parley mock-llm` reads in a prompt (Models' ToolIntent): the weather turns name
    /// get_weather, the other text turns and the spoken questions name no tool.
    @Test func onlyTheWeatherTurnsNameTheTool() {
        #expect(ToolIntent.named(in: SurviveToolTurn.prompt(3), ["get_weather"]) == [0])
        #expect(ToolIntent.named(in: TurnsTools.turnText(4), ["get_weather"]).isEmpty)
        for sentence in SurviveSpeech.sentences { #expect(ToolIntent.named(in: sentence, ["get_weather"]).isEmpty, "\(sentence)") }
        let arguments = ToolIntent.arguments(for: try? JSON(parsing: #"{"type":"object","properties":{"city":{"type":"string"}}}"#),
                                             prompt: SurviveToolTurn.prompt(3), avoiding: ["get", "weather"])
        #expect(arguments["city"]?.string == "Paris")
    }

    @Test func theSessionUpdateAndTheOutputAreJSON() throws {
        let update = try JSON(parsing: #"{"type":"session.update","session":{"type":"realtime","# + SurviveToolTurn.sessionTools + "}}")
        #expect(update["session"]?["tools"]?.array?.first?["name"]?.string == "get_weather")
        let item = try JSON(parsing: #"{"output":"\#(SurviveToolTurn.output)"}"#)
        #expect(try JSON(parsing: item["output"]?.string ?? "")["temperature_c"]?.int == 18)
    }
}

@Suite struct SurviveTruncationTests {
    @Test func aCutTranscriptIsTheFirstWordsOfTheStreamedOneCaseAndPunctuationAside() {
        let streamed = "You said: what is the capital of France — this is a mock reply."
        #expect(TranscriptCut.verdict(kept: "You said: what is", streamed: streamed) == .prefix)
        #expect(TranscriptCut.verdict(kept: "you said what is the", streamed: streamed) == .prefix)
        #expect(TranscriptCut.verdict(kept: "", streamed: streamed) == .prefix)
        #expect(TranscriptCut.verdict(kept: streamed, streamed: streamed) == .prefix)
        #expect(TranscriptCut.verdict(kept: "You said: what is the capital of France — this is a mock reply. And more", streamed: streamed) == .longer)
        #expect(TranscriptCut.verdict(kept: "You said: who is", streamed: streamed) == .notWordPrefix)
        // Cut inside a word is not a word prefix: the server cuts back to the word's start.
        #expect(TranscriptCut.verdict(kept: "You said: wha", streamed: streamed) == .notWordPrefix)
    }

    @Test func wordsIgnoreApostrophesAndSplitOnEverythingElse() {
        #expect(TranscriptCut.words("It's mock-llm.  Done!") == ["its", "mock", "llm", "done"])
    }

    @Test func aReplyIsCutOnceThreeHundredMillisecondsOfItsAudioArrived() {
        #expect(!SurviveSpokenCut.due(receivedMs: 299))
        #expect(SurviveSpokenCut.due(receivedMs: 300))
        let cut = SurviveSpokenCut(itemID: "item_1", responseID: "resp_1", receivedSamples: 24 * 300 + 23, streamed: "a b c")
        #expect(cut.audioEndMs == 300, "rounded down to the millisecond")
    }

    @Test func aCutResponseEndsCancelledOrCompletedFirst() {
        #expect(SurviveSpokenCut.acceptable(status: "cancelled"))
        #expect(SurviveSpokenCut.acceptable(status: "completed"))
        #expect(!SurviveSpokenCut.acceptable(status: "incomplete"))
        #expect(!SurviveSpokenCut.acceptable(status: "failed"))
    }

    @Test func aTruncationMayNotClaimMoreAudioThanArrived() {
        #expect(SurviveSpokenCut.withinReceived(audioEndMs: 400, receivedMs: 400))
        #expect(!SurviveSpokenCut.withinReceived(audioEndMs: 401, receivedMs: 400))
    }

    @Test func theTranscriptAtTheEndMayNotBeLongerThanRightAfterTheCut() {
        var cut = SurviveSpokenCut(itemID: "i", responseID: "r", receivedSamples: 24 * 500, streamed: "one two three four five")
        #expect(cut.kept(final: "one two three four five"), "nothing to compare with before the retrieve after the cut")
        cut.afterCut = "one two"
        #expect(cut.kept(final: "one two"))
        #expect(cut.kept(final: "one"))
        #expect(!cut.kept(final: "one two three four five"), "a truncation forgotten (say, by a resume from the store)")
    }

    @Test func theStreamedTranscriptGrowsWithLateDeltasAndTakesTheWholeOneWhenLonger() {
        var cut = SurviveSpokenCut(itemID: "i", responseID: "r", receivedSamples: 0, streamed: "one")
        cut.heard(" two")
        #expect(cut.streamed == "one two")
        cut.streamedWhole("one")
        #expect(cut.streamed == "one two")
        cut.streamedWhole("One two, three.")
        #expect(cut.streamed == "One two, three.")
    }
}

@Suite struct SurviveCloseTests {
    @Test func dropsAndTheClosesThatParkASessionAreResumed() {
        #expect(SurviveClose.classify(code: nil, reason: "") == .drop)
        #expect(SurviveClose.classify(code: 1001, reason: "server shutting down") == .drop)
        #expect(SurviveClose.classify(code: 1012, reason: "server restarting; resume elsewhere") == .drop)
        #expect(SurviveClose.classify(code: 1013, reason: "resume_unavailable") == .drop)
    }

    @Test func aPolicyCloseIsDocumentedOnlyWithAReasonTheServerGives() {
        #expect(SurviveClose.classify(code: 1008, reason: "resume_token_invalid") == .ended("1008 resume_token_invalid"))
        #expect(SurviveClose.classify(code: 1008, reason: "not reading: outbound queue over its cap") == .ended("1008 not reading: outbound queue over its cap"))
        #expect(SurviveClose.classify(code: 1008, reason: "because") == .undocumented("1008 because", resumes: false))
        #expect(SurviveClose.classify(code: 1008, reason: "") == .undocumented("1008", resumes: false))
    }

    @Test func framingClosesBlameTheClientAndOtherCodesAreUndocumented() {
        #expect(SurviveClose.classify(code: 1009, reason: "") == .clientFault("1009"))
        #expect(SurviveClose.classify(code: 1002, reason: "") == .clientFault("1002"))
        #expect(SurviveClose.classify(code: 1000, reason: "") == .undocumented("1000", resumes: false))
        #expect(SurviveClose.classify(code: 1011, reason: "oops") == .undocumented("1011 oops", resumes: true))
        #expect(SurviveClose.classify(code: 4000, reason: "") == .undocumented("4000", resumes: true))
    }
}

@Suite struct SurviveTenantTimelineTests {
    @Test func onlyChangesAreKeptAtMostOneASecond() {
        var timeline = SurviveTenantTimeline()
        timeline.sample(at: 100, open: 0)
        timeline.sample(at: 101, open: 10)
        timeline.sample(at: 101, open: 12)  // the same second again: skipped
        timeline.sample(at: 102, open: 10)
        timeline.sample(at: 103, open: 11)
        timeline.sample(at: 104, open: 10)
        #expect(timeline.samples.map(\.unixSeconds) == [100, 101, 103, 104])
        #expect(timeline.samples.map(\.open) == [0, 10, 11, 10])
        #expect(timeline.maximum == 11)
    }

    @Test func theSamplesStopGrowingAtTheirBoundButTheMaximumGoesOn() {
        var timeline = SurviveTenantTimeline()
        for second in 0..<(SurviveTenantTimeline.maxSamples + 10) { timeline.sample(at: second, open: second % 2) }
        timeline.sample(at: Int.max, open: 7)
        #expect(timeline.samples.count == SurviveTenantTimeline.maxSamples)
        #expect(timeline.maximum == 7)
    }

    @Test func onlyMoreThanThreeTimesTheLimitFails() {
        #expect(!SurviveTenantTimeline.exceedsBound(maximum: 30, limit: 10))
        #expect(SurviveTenantTimeline.exceedsBound(maximum: 31, limit: 10))
    }
}

@Suite struct SurviveWireTests {
    @Test func aClipIsAppendedInPiecesOfAtMostAHundredMilliseconds() throws {
        let samples = (0..<(2_400 * 2 + 100)).map { Int16(truncatingIfNeeded: $0) }
        let appends = SurviveSpeech.appends(samples)
        #expect(appends.count == 3)
        let sizes = try appends.map { try SurviveSpeech.samples(inBase64: #require(try JSON(parsing: $0)["audio"]?.string)) }
        #expect(sizes == [2_400, 2_400, 100])
        #expect(try JSON(parsing: appends[0])["type"]?.string == "input_audio_buffer.append")
    }

    @Test func base64LengthGivesTheSamples() {
        #expect(SurviveSpeech.samples(inBase64: Base64.encode([UInt8](repeating: 0, count: 4_800))) == 2_400)
        #expect(SurviveSpeech.samples(inBase64: Base64.encode([UInt8](repeating: 0, count: 2))) == 1)
        #expect(SurviveSpeech.samples(inBase64: "") == 0)
    }

    @Test func aTenantKeyGoesInTheSubprotocolInsteadOfTheBearerHeader() throws {
        var random = FastRandom()
        let handshake = UpgradeHandshake(random: &random)
        let target = try LoadTarget("ws://127.0.0.1:8080/v1/realtime?resume=1", caFile: nil)
        let offered = String(decoding: handshake.request(for: target, offeredKey: "sk-acme"), as: UTF8.self)
        #expect(offered.contains("\r\nSec-WebSocket-Protocol: realtime, openai-insecure-api-key.sk-acme\r\n"))
        #expect(!offered.contains("Authorization:"))
        let plain = String(decoding: handshake.request(for: target), as: UTF8.self)
        #expect(!plain.contains("Sec-WebSocket-Protocol"))
    }
}

/// A turn's story, as an unanswered turn reports it: offsets from the send, bounded, the first
/// entries and the latest kept.
@Suite struct SurviveTurnStoryTests {
    @Test func entriesCarryTheirMillisecondsSinceTheTurnWasSent() {
        var story = SurviveTurnStory()
        story.note("before any turn", at: 5_000_000)
        story.begin("sent text turn 3 as u1t3", at: 1_000_000_000)
        story.note("response.created resp_1", at: 1_250_000_000)
        #expect(story.text == "+0 ms sent text turn 3 as u1t3, +250 ms response.created resp_1")
    }

    @Test func aLongStoryKeepsItsBeginningAndItsEndAndSaysWhatItLeftOut() {
        var story = SurviveTurnStory()
        story.begin("sent", at: 1_000_000)
        for i in 1...40 { story.note("event \(i)", at: 1_000_000 + UInt64(i) * 1_000_000) }
        #expect(story.entries.count == SurviveTurnStory.limit)
        #expect(story.entries.first == "+0 ms sent")
        #expect(story.entries.last == "+40 ms event 40")
        #expect(story.text.contains("(17 more)"))
        #expect(story.entries[SurviveTurnStory.limit / 2 - 1] == "+11 ms event 11")
        story.begin("sent again", at: 2_000_000)
        #expect(story.text == "+0 ms sent again")
    }
}
