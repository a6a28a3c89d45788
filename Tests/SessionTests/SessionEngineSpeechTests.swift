@testable import Models
import Testing
import Server
import Session

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
