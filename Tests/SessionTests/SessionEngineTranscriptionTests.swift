@testable import Models
import Testing
import Server
import Session
import SessionEngine

/// Spoken turns with a recogniser: audio streams to it while the user speaks, and the reply waits
/// for the words.
@Suite struct SessionEngineTranscriptionTests {
    static func harness() throws -> EngineHarness {
        try EngineHarness(options: .init(transcribes: true))
    }

    /// The turn's actions with the streamed audio counted rather than listed.
    static func summary(_ actions: [SessionAction]) -> [String] {
        var out: [String] = []
        for type in actions.types where !(type == "transcribe.audio" && out.last == "transcribe.audio") { out.append(type) }
        return out
    }

    @Test func aSpokenTurnStreamsToTheRecogniserAndIsAnsweredWithItsWords() throws {
        var h = try Self.harness()
        let clip = try SpeechClip.make(SessionEngineAudioTests.question)
        let actions = h.audio(clip.chunks(ms: 20))
        #expect(Self.summary(actions) == [
            "input_audio_buffer.speech_started", "transcribe.begin", "transcribe.audio", "input_audio_buffer.speech_stopped",
            "input_audio_buffer.committed", "conversation.item.created", "transcribe.finish",
        ])
        // What the recogniser got is the speech with its padding, and no audio from before.
        var heard = 0
        for action in actions {
            if case .transcription(.begin(_, let audio, _, _)) = action { heard += audio.count }
            if case .transcription(.audio(_, let audio)) = action { heard += audio.count }
        }
        let spokenMs = clip.speechEndMs - clip.speechStartMs
        #expect(heard / 16 >= spokenMs && heard / 16 <= spokenMs + 1000 + 600, "heard \(heard / 16) ms of \(spokenMs) ms spoken")
        guard case .speechStarted(_, let itemID) = actions.events[0].kind else { return }

        let partial = h.engine.handle(.transcription(itemID: itemID, .partial("what is")))
        let growth = h.engine.handle(.transcription(itemID: itemID, .partial("what is twelve")))
        let rewrite = h.engine.handle(.transcription(itemID: itemID, .partial("what was")))
        #expect(partial.events.map(\.kind) == [.inputAudioTranscriptionDelta(itemID: itemID, contentIndex: 0, delta: "what is")])
        #expect(growth.events.map(\.kind) == [.inputAudioTranscriptionDelta(itemID: itemID, contentIndex: 0, delta: " twelve")])
        #expect(rewrite.isEmpty)

        let final = h.engine.handle(.transcription(itemID: itemID, .final("what is twelve times seven")))
        #expect(final.types == ["conversation.item.input_audio_transcription.completed", "response.created", "startModel"])
        // Its usage is the turn's length, as a transcription billed by duration reports it.
        guard case .inputAudioTranscriptionCompleted(_, _, _, let seconds, _) = final.events[0].kind else { return }
        #expect(abs(seconds * 1000 - Double(spokenMs)) <= 300, "\(seconds) s for \(spokenMs) ms spoken")
        #expect(final.events[0].json(dialect: .ga).contains(#""usage":{"type":"duration","seconds":"#))
        let model = try final.model()
        #expect(model.messages.last?.text == "what is twelve times seven")
        #expect(model.messages.last?.role == .user)
    }

    @Test func anOverloadedRecogniserRefusesTheTurnWithAnError() throws {
        var h = try Self.harness()
        let actions = h.audio(try SpeechClip.make(SessionEngineAudioTests.question).chunks(ms: 20))
        guard case .speechStarted(_, let itemID) = actions.events[0].kind else { return }
        let failed = h.engine.handle(.transcription(itemID: itemID, .failed(ModelError(code: "overloaded", message: "busy"))))
        #expect(failed.types == ["conversation.item.input_audio_transcription.failed", "error"])
        #expect(failed.errors.first?.code == "overloaded")
        #expect(h.engine.activeResponseID == nil)
    }

    @Test func aFailedTranscriptionIsStillAnsweredFromTheAudiosLength() throws {
        var h = try Self.harness()
        let actions = h.audio(try SpeechClip.make(SessionEngineAudioTests.question).chunks(ms: 20))
        guard case .speechStarted(_, let itemID) = actions.events[0].kind else { return }
        let failed = h.engine.handle(.transcription(itemID: itemID, .failed(ModelError(code: "transcription_failed", message: "upstream 500"))))
        #expect(failed.types == ["conversation.item.input_audio_transcription.failed", "response.created", "startModel"])
    }

    /// The recogniser fails while the user is still speaking (a helper that died mid-turn): no
    /// event yet, for an item that does not exist; the whole turn goes to it again when it ends,
    /// and only that attempt's failure is reported, once, after the item.
    @Test func aRecogniserThatFailsMidTurnIsAskedAgainAtTheEndAndFailsOnce() throws {
        var h = try Self.harness()
        let chunks = try SpeechClip.make(SessionEngineAudioTests.question).chunks(ms: 20)
        let started = h.audio(Array(chunks.prefix(chunks.count / 2)))
        guard case .speechStarted(_, let itemID)? = started.events.first?.kind else { Issue.record("no speech: \(started.types)"); return }
        let midway = h.engine.handle(.transcription(itemID: itemID, .failed(ModelError(code: "transcription_failed", message: "the helper died"))))
        #expect(midway.isEmpty, "\(midway.types)")
        let rest = h.audio(Array(chunks.dropFirst(chunks.count / 2)))
        #expect(!rest.types.contains("transcribe.audio"), "nothing streams to the failed recogniser")
        let commit = Self.summary(rest).drop { $0 != "input_audio_buffer.speech_stopped" }
        #expect(Array(commit) == ["input_audio_buffer.speech_stopped", "input_audio_buffer.committed", "conversation.item.created", "transcribe.begin", "transcribe.finish"])
        let failed = h.engine.handle(.transcription(itemID: itemID, .failed(ModelError(code: "transcription_failed", message: "not running"))))
        #expect(failed.types == ["conversation.item.input_audio_transcription.failed", "response.created", "startModel"])
    }

    @Test func clearingTheBufferCancelsTheTurnsRecognitionAndLateResultsAreDropped() throws {
        var h = try Self.harness()
        let clip = try SpeechClip.make(SessionEngineAudioTests.question)
        let halfway = clip.chunks(ms: 20).prefix(clip.chunks(ms: 20).count / 2)
        let started = h.audio(Array(halfway))
        guard case .speechStarted(_, let itemID)? = started.events.first?.kind else { Issue.record("no speech: \(started.types)"); return }
        let cleared = h.client(#"{"type":"input_audio_buffer.clear"}"#)
        #expect(cleared.types == ["input_audio_buffer.cleared", "transcribe.cancel"])
        #expect(h.engine.handle(.transcription(itemID: itemID, .final("late"))).isEmpty)
    }

    @Test func aManualCommitSendsAllItsAudioAndTheResponseWaitsForTheWords() throws {
        var h = try EngineHarness.manual(options: .init(transcribes: true))
        _ = h.audio(try SpeechClip.make(SessionEngineAudioTests.question).samples)
        let committed = h.client(#"{"type":"input_audio_buffer.commit"}"#)
        #expect(committed.types == ["input_audio_buffer.committed", "conversation.item.created", "transcribe.begin", "transcribe.finish"])
        let create = h.client(#"{"type":"response.create"}"#)
        #expect(create.isEmpty)
        guard case .inputAudioCommitted(let itemID, _) = committed.events[0].kind else { return }
        let final = h.engine.handle(.transcription(itemID: itemID, .final("twelve times seven")))
        #expect(final.types == ["conversation.item.input_audio_transcription.completed", "response.created", "startModel"])
    }
}
