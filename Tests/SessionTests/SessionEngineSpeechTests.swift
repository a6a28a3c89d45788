@testable import Models
import Glibc
import Testing
import Server
import Session
import SessionEngine

/// Spoken replies in the engine: the reply's text goes to the synthesiser as it streams, and the
/// response ends only once its speech is out; a cancel stops the speech and says where it stopped.
@Suite struct SessionEngineSpeechTests {
    static func harness() throws -> EngineHarness {
        var options = SessionEngine.Options(synthesizes: true)
        options.configuration.outputModalities = .audio
        return try EngineHarness(options: options)
    }

    @Test func aSpokenReplyEndsOnlyWhenItsSpeechHasBeenSent() throws {
        var h = try Self.harness()
        _ = h.say("hello")
        let id = try h.respond()
        let first = h.delta(id, "Hello there.")
        #expect(first.types.suffix(2) == ["response.output_audio_transcript.delta", "speak.text"])
        guard case .speech(.text(let at, _, let format, let text))? = first.last else { Issue.record("no speech: \(first.types)"); return }
        #expect(text == "Hello there." && format == .pcm16 && at.responseID == id)
        // The model is done; the response waits for its speech.
        #expect(h.finish(id).types == ["speak.end"])
        #expect(h.engine.activeResponseID == id)
        let done = h.engine.handle(.speechOutput(responseID: id, .finished))
        #expect(done.types == ["response.output_audio.done", "response.output_audio_transcript.done", "response.content_part.done",
                               "response.output_item.done", "response.done"])
        #expect(done.responseDone?.status == .completed)
    }

    @Test func cancellingStopsTheSpeechAfterResponseDoneAndTheTruncationFollows() throws {
        var h = try Self.harness()
        _ = h.say("tell me a story")
        let id = try h.respond()
        let spoken = h.delta(id, "Once upon a time.")
        guard case .speech(.text(let at, _, _, _))? = spoken.last else { Issue.record("no speech: \(spoken.types)"); return }
        let cancelled = h.client(#"{"type":"response.cancel"}"#)
        #expect(cancelled.types.first == "cancelModel")
        #expect(cancelled.types.suffix(2) == ["response.done", "speak.stop"])
        #expect(cancelled.responseDone?.status == .cancelled)
        #expect(h.engine.history.last?.text == "Once upon a time.")
        let truncated = h.engine.handle(.speechOutput(responseID: id, .interrupted(itemID: at.itemID, playedMs: 640, heard: "Once upon")))
        #expect(truncated.events.map(\.kind) == [.conversationItemTruncated(itemID: at.itemID, contentIndex: 0, audioEndMs: 640)])
        // The history holds what the user heard, not the text generated ahead of the audio.
        #expect(h.engine.history.last?.text == "Once upon")
    }

    @Test func textRepliesAreNotSpokenEvenWithASynthesiser() throws {
        var h = try EngineHarness(options: .init(synthesizes: true))
        _ = h.say("hello")
        let id = try h.respond()
        #expect(!h.delta(id, "Hi.").types.contains("speak.text"))
        #expect(h.finish(id).types.last == "response.done")
    }

    @Test func aFailedSynthesisIsSaidAndTheReplyStillEnds() throws {
        var h = try Self.harness()
        _ = h.say("hello")
        let id = try h.respond()
        _ = h.delta(id, "Hello.")
        _ = h.finish(id)
        let failed = h.engine.handle(.speechOutput(responseID: id, .failed(ModelError(code: "synthesis_failed", message: "espeak-ng: no voice"))))
        #expect(failed.types == ["error"])
        #expect(failed.errors.first?.message.contains("could not be spoken") == true)
        #expect(h.engine.handle(.speechOutput(responseID: id, .finished)).types.last == "response.done")
    }
}

/// Speech during a spoken reply: it pauses the reply, and either resumes it (short, noise,
/// backchannel: no event at all) or barges in (`speech_started`, then the cancel) once confirmed.
@Suite struct SessionEngineInterruptionTests {
    /// A tone as loud as speech, `ms` long, after 200 ms of silence and followed by 1 s of it.
    static func burst(ms: Int) -> [[Int16]] {
        let tone = (0..<(ms * 16)).map { Int16(8000 * sin(Double($0) * 2 * .pi * 220 / 16_000)) }
        let samples = [Int16](repeating: 0, count: 3200) + tone + [Int16](repeating: 0, count: 16_000)
        return stride(from: 0, to: samples.count, by: 320).map { Array(samples[$0..<min(samples.count, $0 + 320)]) }
    }

    static func speaking(transcribes: Bool = false, update: String? = nil) throws -> (EngineHarness, String) {
        var options = SessionEngine.Options(transcribes: transcribes, synthesizes: true)
        options.configuration.outputModalities = .audio
        var h = try EngineHarness(options: options)
        if let update { _ = h.client(update) }
        // Quiet first, so the detector knows the floor.
        _ = h.audio([Int16](repeating: 0, count: 16_000))
        _ = h.say("tell me a story")
        let id = try h.respond()
        _ = h.delta(id, "Once upon a time there was a dragon.")
        return (h, id)
    }

    @Test func shortSpeechPausesTheReplyThenResumesItWithNoEvent() throws {
        var (h, id) = try Self.speaking()
        let actions = h.audio(Self.burst(ms: 300))
        // Only Parley's own pair (sent on /ws alone): none of the Realtime API's turn events.
        #expect(actions.types == ["parley.response.paused", "speak.pause", "parley.response.resumed", "speak.resume.short"])
        #expect(actions.events.map(\.kind) == [.replyPaused(responseID: id), .replyResumed(responseID: id, reason: "short")])
        #expect(h.engine.activeResponseID == id)
        // The response completes as if nothing had happened; no user item was made.
        _ = h.finish(id)
        let done = h.engine.handle(.speechOutput(responseID: id, .finished))
        #expect(done.responseDone?.status == .completed)
        #expect(h.engine.history.map(\.role) == [.user, .assistant])
    }

    @Test func speechOf500msBargesInWithSpeechStartedThenTheCancel() throws {
        var (h, id) = try Self.speaking()
        var chunks = Self.burst(ms: 1500)[...]
        var actions: [SessionAction] = []
        while let chunk = chunks.popFirst(), !actions.types.contains("speak.stop") { actions += h.audio(chunk) }
        #expect(actions.types == [
            "parley.response.paused", "speak.pause", "input_audio_buffer.speech_started", "cancelModel", "response.output_audio.done",
            "response.output_audio_transcript.done", "response.content_part.done", "response.output_item.done", "response.done", "speak.stop",
        ])
        #expect(actions.responseDone?.statusDetails == .cancelled(reason: "turn_detected"))
        // speech_started keeps the speech's own start: 200 ms into the burst's silence, less the padding.
        guard case .speechStarted(let startMs, _) = actions.events.dropFirst().first?.kind else { Issue.record("\(actions.types)"); return }
        #expect(abs(startMs - (1000 + 200 - 300)) <= 40)
        _ = id
        let rest = h.audio(Array(chunks))
        #expect(rest.types == ["input_audio_buffer.speech_stopped", "input_audio_buffer.committed", "conversation.item.created", "response.created", "startModel"])
    }

    @Test func backchannelWordsResumeTheReplyAndLeaveNoTurn() throws {
        var (h, id) = try Self.speaking(transcribes: true)
        var chunks = Self.burst(ms: 900)[...]
        var actions: [SessionAction] = []
        while let chunk = chunks.popFirst(), !actions.types.contains("transcribe.begin") { actions += h.audio(chunk) }
        guard case .transcription(.begin(let itemID, _, _, _))? = actions.first(where: { if case .transcription(.begin) = $0 { true } else { false } })
        else { Issue.record("\(actions.types)"); return }
        #expect(actions.types.contains("speak.pause"))
        #expect(h.engine.handle(.transcription(itemID: itemID, .partial("uh huh"))).isEmpty)
        // No settled words come: the reply resumes when their wait is over.
        let rest = h.audio(Array(chunks) + Array(repeating: [Int16](repeating: 0, count: 320), count: TurnTaking.pauseWordsWaitMs / 20))
        #expect(rest.types.filter { !$0.hasPrefix("transcribe.audio") } == ["transcribe.cancel", "parley.response.resumed", "speak.resume.backchannel"])
        #expect(rest.events.map(\.kind) == [.replyResumed(responseID: id, reason: "backchannel")])
        #expect(h.engine.activeResponseID == id)
        // A late result for the dropped speech changes nothing.
        #expect(h.engine.handle(.transcription(itemID: itemID, .final("uh huh"))).isEmpty)
    }

    @Test func aRealWordBargesInBefore500msAndItsWordsFollow() throws {
        var (h, _) = try Self.speaking(transcribes: true)
        var chunks = Self.burst(ms: 1500)[...]
        var actions: [SessionAction] = []
        while let chunk = chunks.popFirst(), !actions.types.contains("transcribe.begin") { actions += h.audio(chunk) }
        guard case .transcription(.begin(let itemID, _, _, _))? = actions.first(where: { if case .transcription(.begin) = $0 { true } else { false } })
        else { Issue.record("\(actions.types)"); return }
        // The recogniser put the paused speech's decodes first while the reply waited on them.
        #expect(actions.contains(.transcription(.replyWaits(itemID: itemID, true))))
        let cut = h.engine.handle(.transcription(itemID: itemID, .partial("stop")))
        #expect(cut.types == [
            "transcribe.replyDecided", "input_audio_buffer.speech_started", "cancelModel", "response.output_audio.done", "response.output_audio_transcript.done",
            "response.content_part.done", "response.output_item.done", "response.done", "speak.stop",
            "conversation.item.input_audio_transcription.delta",
        ])
    }

    @Test func interruptResponseFalseNeverPausesASpokenReply() throws {
        var (h, id) = try Self.speaking(update: #"{"type":"session.update","session":{"turn_detection":{"type":"server_vad","interrupt_response":false}}}"#)
        let actions = h.audio(Self.burst(ms: 1500))
        #expect(!actions.types.contains("speak.pause") && !actions.types.contains("cancelModel"))
        #expect(actions.types.first == "input_audio_buffer.speech_started")
        #expect(h.engine.activeResponseID == id)
    }

    @Test func aZeroMinimumDurationInterruptsAtOnceAsBefore() throws {
        var (h, _) = try Self.speaking(update: #"{"type":"session.update","session":{"turn_detection":{"type":"server_vad","interruption":{"min_duration_ms":0}}}}"#)
        let actions = h.audio(Self.burst(ms: 300))
        #expect(!actions.types.contains("speak.pause"))
        #expect(actions.types.prefix(2) == ["input_audio_buffer.speech_started", "cancelModel"])
    }

    @Test func aReplyCancelledWhilePausedLetsTheSpeechBeATurn() throws {
        var (h, _) = try Self.speaking()
        var chunks = Self.burst(ms: 400)[...]
        var actions: [SessionAction] = []
        while let chunk = chunks.popFirst(), !actions.types.contains("speak.pause") { actions += h.audio(chunk) }
        let cancelled = h.client(#"{"type":"response.cancel"}"#)
        #expect(cancelled.types.contains("input_audio_buffer.speech_started"))
        #expect(cancelled.responseDone?.statusDetails == .cancelled(reason: "client_cancelled"))
        let rest = h.audio(Array(chunks))
        #expect(rest.types.prefix(3) == ["input_audio_buffer.speech_stopped", "input_audio_buffer.committed", "conversation.item.created"])
    }
}

/// Parley's `turn_detection.interruption` extension: validated as the API's fields are, reported
/// back only once a client has changed it.
@Suite struct InterruptionSettingsTests {
    @Test(arguments: [
        (#"{"min_duration_ms":-1}"#, "session.turn_detection.interruption.min_duration_ms"),
        (#"{"min_duration_ms":10001}"#, "session.turn_detection.interruption.min_duration_ms"),
        (#"{"min_duration_ms":"500"}"#, "session.turn_detection.interruption.min_duration_ms"),
        (#"{"min_words":21}"#, "session.turn_detection.interruption.min_words"),
        (#"{"min_words":1.5}"#, "session.turn_detection.interruption.min_words"),
        (#"5"#, "session.turn_detection.interruption"),
        (#"[]"#, "session.turn_detection.interruption"),
    ])
    func badValuesAreRefusedNamingTheField(value: String, param: String) throws {
        var h = try EngineHarness()
        let actions = h.client(#"{"type":"session.update","session":{"turn_detection":{"type":"server_vad","interruption":\#(value)}}}"#)
        #expect(actions.types == ["error"])
        #expect(actions.errors.first?.param == param)
        #expect(h.engine.configuration.turnDetection?.interruption == ReplyInterruption.Settings())
    }

    @Test func aValidValueIsKeptAndReportedAndTheDefaultIsNot() throws {
        var h = try EngineHarness()
        let plain = h.client(#"{"type":"session.update","session":{"turn_detection":{"type":"server_vad"}}}"#)
        #expect(!plain.events.first!.json(dialect: .ga).contains("interruption"))
        let set = h.client(#"{"type":"session.update","session":{"audio":{"input":{"turn_detection":{"type":"server_vad","interruption":{"min_duration_ms":800,"min_words":2}}}}}}"#)
        #expect(h.engine.configuration.turnDetection?.interruption == ReplyInterruption.Settings(minDurationMs: 800, minWords: 2))
        #expect(set.events.first!.json(dialect: .ga).contains(#""interruption":{"min_duration_ms":800,"min_words":2}"#))
        // Fields left out keep their values.
        _ = h.client(#"{"type":"session.update","session":{"turn_detection":{"type":"server_vad","interruption":{"min_words":0}}}}"#)
        #expect(h.engine.configuration.turnDetection?.interruption == ReplyInterruption.Settings(minDurationMs: 800, minWords: 0))
    }
}

@Suite struct ParleyTurnTakingEventTests {
    @Test func pausedAndResumedAreParleysShapes() {
        #expect(ServerEvent(eventID: "event_1", .replyPaused(responseID: "resp_1")).json(dialect: .ga)
                == #"{"type":"parley.response.paused","event_id":"event_1","response_id":"resp_1"}"#)
        let resumed = ServerEvent(eventID: "event_2", .replyResumed(responseID: "resp_1", reason: "backchannel"))
        #expect(resumed.json(dialect: .beta) == #"{"type":"parley.response.resumed","event_id":"event_2","response_id":"resp_1","reason":"backchannel"}"#)
        #expect(resumed.isParleyTurnTaking && !ServerEvent(eventID: "event_3", .inputAudioCleared).isParleyTurnTaking)
    }
}
