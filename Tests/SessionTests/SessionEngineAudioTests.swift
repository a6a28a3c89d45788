import JSON
@testable import Models
import Testing
import Server
import Codec
import Session
import Loop
import SessionEngine

@Suite struct SessionEngineAudioTests {
    static let question = "What is twelve times seven?"

    @Test func serverVADTurnCommitsTheSpeechAndStartsAResponse() throws {
        var h = try EngineHarness()
        _ = h.start()
        let clip = try SpeechClip.make(Self.question)
        let actions = h.audio(clip.chunks(ms: 20))
        #expect(actions.types == [
            "input_audio_buffer.speech_started", "input_audio_buffer.speech_stopped", "input_audio_buffer.committed",
            "conversation.item.created", "response.created", "startModel",
        ])
        guard case .speechStarted(let startMs, let itemID) = actions.events[0].kind,
              case .speechStopped(let endMs, let stoppedID) = actions.events[1].kind,
              case .inputAudioCommitted(let committedID, let previous) = actions.events[2].kind,
              case .conversationItemCreated(let item, _) = actions.events[3].kind
        else { Issue.record("unexpected events \(actions.types)"); return }
        // audio_start_ms is the start less the 300 ms default padding.
        #expect(abs(startMs + 300 - clip.speechStartMs) <= 150, "start \(startMs) + 300 vs \(clip.speechStartMs)")
        #expect(abs(endMs - clip.speechEndMs) <= 150, "end \(endMs) vs \(clip.speechEndMs)")
        #expect(stoppedID == itemID && committedID == itemID && item.id == itemID)
        #expect(previous == nil)
        #expect(item == ConversationItem(id: itemID, role: .user, status: .completed, content: [.inputAudio(transcript: nil)]))

        let model = try actions.model()
        let spoken = try #require(model.messages.last?.spokenMilliseconds)
        #expect(abs(spoken - (clip.speechEndMs - clip.speechStartMs)) <= 300)
        #expect(model.messages.last?.text.hasPrefix("[the user spoke for ") == true)
        #expect(model.messages.last?.text.hasSuffix(" s; no transcriber is configured]") == true)
        // The built-in agent answers it.
        #expect(BuiltinAgent().reply(to: model.messages).contains("no transcriber is configured"))
    }

    @Test func appendedBase64PCM16At24kHzMakesTheSameTurn() throws {
        var h = try EngineHarness()
        let clip = try SpeechClip.make(Self.question, rate: 24_000)
        var actions: [SessionAction] = []
        for chunk in clip.chunks(ms: 40) {
            let audio = Base64.encode(PCM.littleEndianBytes(chunk))
            actions += h.client(#"{"type":"input_audio_buffer.append","audio":"\#(audio)"}"#)
        }
        #expect(actions.types == [
            "input_audio_buffer.speech_started", "input_audio_buffer.speech_stopped", "input_audio_buffer.committed",
            "conversation.item.created", "response.created", "startModel",
        ])
        guard case .speechStopped(let endMs, _) = actions.events[1].kind else { return }
        #expect(abs(endMs - clip.speechEndMs) <= 150)
    }

    /// G.711 input is heard at its own 8 kHz: the same turn, its times in the same milliseconds.
    @Test(arguments: [("g711_ulaw", G711.Law.muLaw), ("g711_alaw", .aLaw)])
    func appendedG711At8kHzMakesTheSameTurn(format: String, law: G711.Law) throws {
        var h = try EngineHarness(options: .init(transcribes: true))
        _ = h.client(#"{"type":"session.update","session":{"input_audio_format":"\#(format)"}}"#)
        #expect(h.engine.inputSampleRate == 8000)
        let clip = try SpeechClip.make(Self.question, rate: 8000)
        var actions: [SessionAction] = []
        for chunk in clip.chunks(ms: 20) {
            actions += h.client(#"{"type":"input_audio_buffer.append","audio":"\#(Base64.encode(G711.encode(chunk, law)))"}"#)
        }
        // The response waits for the words, which this harness does not supply.
        #expect(actions.types.filter { $0 != "transcribe.audio" } == [
            "input_audio_buffer.speech_started", "transcribe.begin", "input_audio_buffer.speech_stopped",
            "input_audio_buffer.committed", "conversation.item.created", "transcribe.finish",
        ])
        guard case .speechStarted(let startMs, _) = actions.events[0].kind,
              let stopped = actions.events.first(where: { if case .speechStopped = $0.kind { true } else { false } }),
              case .speechStopped(let endMs, _) = stopped.kind else { Issue.record("\(actions.types)"); return }
        #expect(abs(startMs + 300 - clip.speechStartMs) <= 150, "start \(startMs) + 300 vs \(clip.speechStartMs)")
        #expect(abs(endMs - clip.speechEndMs) <= 150, "end \(endMs) vs \(clip.speechEndMs)")
        // The recogniser is told the rate, and gets 8 kHz samples: the turn's length at 8 per ms.
        var heard = 0
        for action in actions {
            if case .transcription(.begin(_, let audio, let rate, _)) = action {
                #expect(rate == 8000)
                heard += audio.count
            }
            if case .transcription(.audio(_, let audio)) = action { heard += audio.count }
        }
        #expect(abs(heard / 8 - (endMs - startMs)) <= 600, "\(heard) samples for \(endMs - startMs) ms")
    }

    /// A change of input format between rates keeps the session's clock and drops what was
    /// buffered at the old rate; the detector goes on at the new one.
    @Test func switchingBetweenPCM16AndG711KeepsTheClock() throws {
        var h = try EngineHarness()
        _ = h.audio([Int16](repeating: 0, count: 32_000))  // 2 s at 16 kHz
        _ = h.client(#"{"type":"session.update","session":{"type":"realtime","audio":{"input":{"format":{"type":"audio/pcmu"}}}}}"#)
        #expect(h.engine.inputSampleRate == 8000 && h.engine.accountedBytes == 0)
        let clip = try SpeechClip.make(Self.question, rate: 8000)
        let actions = h.audio(clip.chunks(ms: 20))
        guard case .speechStarted(let startMs, _) = actions.events.first?.kind else { Issue.record("\(actions.types)"); return }
        #expect(abs(startMs + 300 - (2000 + clip.speechStartMs)) <= 150)
        _ = h.client(#"{"type":"session.update","session":{"input_audio_format":"pcm16"}}"#)
        #expect(h.engine.inputSampleRate == 16_000)
    }

    @Test func noisyBackgroundAloneStartsNoTurn() throws {
        var h = try EngineHarness()
        #expect(h.audio(SpeechClip.noise(ms: 4000, dBFS: -35, seed: 11)).isEmpty)
    }

    @Test func twoUtterancesMakeTwoTurnsWithChainedItems() throws {
        var h = try EngineHarness()
        let clip = try SpeechClip.make(Self.question)
        let firstModel = try h.audio(clip.chunks(ms: 20)).model()
        _ = h.delta(firstModel.id, "84.")
        let done = h.finish(firstModel.id)
        let reply = try #require(done.responseDone?.output.first)
        let second = h.audio(clip.chunks(ms: 20))
        guard case .speechStarted(let startMs, _) = second.events[0].kind,
              case .inputAudioCommitted(_, let previous) = second.events[2].kind else { Issue.record("\(second.types)"); return }
        // Offsets count from the session's first sample.
        #expect(abs(startMs + 300 - (clip.durationMs + clip.speechStartMs)) <= 150)
        #expect(previous == reply.id)
        let model = try second.model()
        #expect(model.messages.map(\.role) == [.user, .assistant, .user])
        #expect(model.messages[1] == ChatMessage(role: .assistant, text: "84."))
    }

    @Test func speechDuringAReplyCancelsItAndKeepsOnlyWhatWasDelivered() throws {
        var h = try EngineHarness()
        _ = h.say("Tell me a story")
        let id = try h.respond()
        _ = h.delta(id, "Once upon")
        _ = h.delta(id, " a time")
        let clip = try SpeechClip.make("Stop, wait a moment.")
        var actions: [SessionAction] = []
        var chunks = clip.chunks(ms: 20)[...]
        while let chunk = chunks.popFirst(), !actions.types.contains("input_audio_buffer.speech_started") { actions += h.audio(chunk) }
        #expect(actions.types == [
            "input_audio_buffer.speech_started", "cancelModel", "response.output_text.done", "response.content_part.done",
            "response.output_item.done", "response.done",
        ])
        #expect(actions.contains(.cancelModel(responseID: id)))
        #expect(actions.facts.contains(.bargedIn(responseID: id)) && actions.facts.contains { if case .turnBegan = $0 { true } else { false } })
        let response = try #require(actions.responseDone)
        #expect(response.status == .cancelled && response.statusDetails == .cancelled(reason: "turn_detected"))
        #expect(response.output.first?.content == [.outputText("Once upon a time")])
        #expect(response.output.first?.status == .incomplete)
        // What the model sends after the cancel never reaches the client or the history.
        #expect(h.delta(id, " there was a dragon").isEmpty)
        #expect(h.finish(id).isEmpty)

        let rest = h.audio(Array(chunks))
        #expect(rest.types == ["input_audio_buffer.speech_stopped", "input_audio_buffer.committed", "conversation.item.created", "response.created", "startModel"])
        let model = try rest.model()
        #expect(model.messages.map(\.role) == [.user, .assistant, .user])
        #expect(model.messages[1].text == "Once upon a time")
        #expect(model.messages[2].spokenMilliseconds != nil)
    }

    @Test func interruptResponseFalseLetsTheReplyFinish() throws {
        var h = try EngineHarness()
        _ = h.client(#"{"type":"session.update","session":{"turn_detection":{"type":"server_vad","interrupt_response":false}}}"#)
        _ = h.say("hi")
        let id = try h.respond()
        let actions = h.audio(try SpeechClip.make(Self.question).chunks(ms: 20))
        // Speech is committed, but no second response starts while the first is active.
        #expect(actions.types == ["input_audio_buffer.speech_started", "input_audio_buffer.speech_stopped", "input_audio_buffer.committed", "conversation.item.created"])
        #expect(h.engine.activeResponseID == id)
    }

    /// How a response can end; a turn waiting for it is answered after each.
    enum Ending: String, CaseIterable { case completed, failed, cancelled, stoppedForLength }

    private func end(_ id: String, _ ending: Ending, _ h: inout EngineHarness) -> [SessionAction] {
        switch ending {
        case .completed: h.finish(id)
        case .failed: h.engine.handle(.modelFailed(responseID: id, code: "upstream_error", message: "boom"))
        case .cancelled: h.client(#"{"type":"response.cancel"}"#)
        case .stoppedForLength: h.finish(id, reason: .length)
        }
    }

    private static let noInterrupt = #"{"type":"session.update","session":{"turn_detection":{"type":"server_vad","interrupt_response":false}}}"#

    @Test(arguments: Ending.allCases)
    func aTurnCommittedDuringAReplyIsAnsweredWhenTheReplyEnds(ending: Ending) throws {
        var h = try EngineHarness()
        _ = h.client(Self.noInterrupt)
        _ = h.say("hi")
        let id = try h.respond()
        _ = h.delta(id, "Hello")
        let heard = h.audio(try SpeechClip.make(Self.question).chunks(ms: 20))
        #expect(!heard.types.contains("startModel"))
        let ended = end(id, ending, &h)
        #expect(ended.types.suffix(3) == ["response.done", "response.created", "startModel"])
        let model = try ended.model()
        #expect(model.messages.map(\.role) == [.user, .assistant, .user])
        #expect(model.messages.last?.spokenMilliseconds != nil)
        // Once: the end of that response starts nothing more.
        _ = h.delta(model.id, "I heard you.")
        #expect(h.finish(model.id).types.last == "response.done")
        #expect(h.engine.activeResponseID == nil)
    }

    @Test func severalTurnsCommittedDuringAReplyGetOneResponse() throws {
        var h = try EngineHarness()
        _ = h.client(Self.noInterrupt)
        _ = h.say("hi")
        let id = try h.respond()
        let clip = try SpeechClip.make(Self.question)
        let heard = h.audio(clip.chunks(ms: 20)) + h.audio(clip.chunks(ms: 20))
        #expect(heard.types.filter { $0 == "input_audio_buffer.committed" }.count == 2)
        let ended = h.finish(id)
        #expect(ended.types.filter { $0 == "startModel" }.count == 1)
        let model = try ended.model()
        #expect(model.messages.map(\.role) == [.user, .user, .user])
        #expect(model.messages.suffix(2).allSatisfy { $0.spokenMilliseconds != nil })
    }

    @Test func aTurnThatEndsWhileAClientResponseRunsIsAnsweredAfterIt() throws {
        // interrupt_response is on, but the response began during the turn, so nothing cancels it.
        var h = try EngineHarness()
        let clip = try SpeechClip.make(Self.question)
        let half = (clip.speechStartMs + clip.speechEndMs) / 2 * 16
        #expect(h.audio(Array(clip.samples[..<half])).types == ["input_audio_buffer.speech_started"])
        let id = try h.respond()
        let rest = h.audio(Array(clip.samples[half...]))
        #expect(rest.types == ["input_audio_buffer.speech_stopped", "input_audio_buffer.committed", "conversation.item.created"])
        #expect(h.finish(id).types == ["response.done", "response.created", "startModel"])
    }

    @Test func aWaitingTurnIsAnsweredWhenTheTurnInProgressEndsNotBefore() throws {
        var h = try EngineHarness()
        _ = h.client(Self.noInterrupt)
        _ = h.say("hi")
        let id = try h.respond()
        let clip = try SpeechClip.make(Self.question)
        _ = h.audio(clip.chunks(ms: 20))
        let half = (clip.speechStartMs + clip.speechEndMs) / 2 * 16
        #expect(h.audio(Array(clip.samples[..<half])).types == ["input_audio_buffer.speech_started"])
        // The user is speaking: the waiting turn is answered with this one, when it ends.
        #expect(h.finish(id).types == ["response.done"])
        let rest = h.audio(Array(clip.samples[half...]))
        #expect(rest.types == ["input_audio_buffer.speech_stopped", "input_audio_buffer.committed", "conversation.item.created", "response.created", "startModel"])
        #expect(try rest.model().messages.map(\.role) == [.user, .user, .user])
    }

    @Test func aWaitingTurnIsAnsweredWhenTheTurnInProgressIsCleared() throws {
        var h = try EngineHarness()
        _ = h.client(Self.noInterrupt)
        _ = h.say("hi")
        let id = try h.respond()
        let clip = try SpeechClip.make(Self.question)
        _ = h.audio(clip.chunks(ms: 20))
        let half = (clip.speechStartMs + clip.speechEndMs) / 2 * 16
        _ = h.audio(Array(clip.samples[..<half]))
        #expect(h.finish(id).types == ["response.done"])
        #expect(h.client(#"{"type":"input_audio_buffer.clear"}"#).types == ["input_audio_buffer.cleared", "response.created", "startModel"])
    }

    @Test func createResponseFalseLeavesATurnCommittedDuringAReplyUnanswered() throws {
        var h = try EngineHarness()
        _ = h.client(#"{"type":"session.update","session":{"turn_detection":{"type":"server_vad","interrupt_response":false,"create_response":false}}}"#)
        _ = h.say("hi")
        let id = try h.respond()
        #expect(h.audio(try SpeechClip.make(Self.question).chunks(ms: 20)).types.last == "conversation.item.created")
        #expect(h.finish(id).types == ["response.done"])
        #expect(h.engine.activeResponseID == nil)
    }

    @Test func serverVADCommitWithNoSpeechSinceTheLastCommitIsEmpty() throws {
        var h = try EngineHarness()
        _ = h.audio([Int16](repeating: 0, count: 32_000))  // 2 s of silence: only padding is kept
        let silent = h.client(#"{"type":"input_audio_buffer.commit","event_id":"c1"}"#)
        #expect(silent.types == ["error"])
        let error = try #require(silent.errors.first)
        #expect(error.code == "input_audio_buffer_commit_empty" && error.eventID == "c1")
        #expect(error.message.hasPrefix("no speech since the last commit"))
        #expect(h.engine.history.isEmpty)
        // Nor after a turn server VAD committed itself.
        let model = try h.audio(try SpeechClip.make(Self.question).chunks(ms: 20)).model()
        _ = h.finish(model.id)
        #expect(h.client(#"{"type":"input_audio_buffer.commit"}"#).errors.first?.code == "input_audio_buffer_commit_empty")
        #expect(h.engine.history.count == 1)
    }

    @Test func serverVADCommitDuringSpeechCommitsTheTurnSoFarWithoutAResponse() throws {
        var h = try EngineHarness()
        let clip = try SpeechClip.make(Self.question)
        let half = (clip.speechStartMs + clip.speechEndMs) / 2 * 16
        let started = h.audio(Array(clip.samples[..<half]))
        guard case .speechStarted(_, let itemID) = started.events.first?.kind else { Issue.record("\(started.types)"); return }
        let committed = h.client(#"{"type":"input_audio_buffer.commit"}"#)
        #expect(committed.types == ["input_audio_buffer.committed", "conversation.item.created"])
        guard case .inputAudioCommitted(let committedID, _) = committed.events[0].kind else { return }
        #expect(committedID == itemID)
        #expect(h.engine.history.last?.spokenMilliseconds != nil)
    }

    @Test func createResponseFalseCommitsWithoutAnswering() throws {
        var h = try EngineHarness()
        _ = h.client(#"{"type":"session.update","session":{"turn_detection":{"type":"server_vad","create_response":false}}}"#)
        let actions = h.audio(try SpeechClip.make(Self.question).chunks(ms: 20))
        #expect(actions.types.last == "conversation.item.created")
        #expect(!actions.types.contains("startModel"))
    }

    @Test func manualModeCommitsOnlyWhenAskedAndAnswersOnlyWhenAsked() throws {
        var h = try EngineHarness()
        let update = h.client(#"{"type":"session.update","session":{"audio":{"input":{"turn_detection":null}}}}"#)
        #expect(update.types == ["session.updated"])
        guard case .sessionUpdated(let info) = update.events[0].kind else { return }
        #expect(info.configuration.turnDetection == nil)

        let empty = h.client(#"{"type":"input_audio_buffer.commit","event_id":"c2"}"#)
        #expect(empty.types == ["error"])
        #expect(empty.errors.first?.code == "input_audio_buffer_commit_empty")
        #expect(empty.errors.first?.eventID == "c2")

        // Speech alone does nothing: no detector is listening.
        #expect(h.audio(try SpeechClip.make(Self.question).chunks(ms: 20)).isEmpty)
        let committed = h.client(#"{"type":"input_audio_buffer.commit"}"#)
        #expect(committed.types == ["input_audio_buffer.committed", "conversation.item.created"])
        let spoken = try #require(h.engine.history.last?.spokenMilliseconds)
        #expect(spoken >= 3000 && spoken < 5000)

        let response = h.client(#"{"type":"response.create"}"#)
        #expect(response.types == ["response.created", "startModel"])
        #expect(try response.model().messages.count == 1)
    }

    @Test func clearEmptiesTheBufferSoTheNextCommitFails() throws {
        var h = try EngineHarness.manual()
        _ = h.audio([Int16](repeating: 100, count: 16_000))
        #expect(h.client(#"{"type":"input_audio_buffer.clear"}"#).types == ["input_audio_buffer.cleared"])
        #expect(h.client(#"{"type":"input_audio_buffer.commit"}"#).errors.first?.code == "input_audio_buffer_commit_empty")
        #expect(h.engine.accountedBytes == 0)
    }

    @Test func clearDuringSpeechForgetsTheTurn() throws {
        var h = try EngineHarness()
        let clip = try SpeechClip.make(Self.question)
        let half = (clip.speechStartMs + clip.speechEndMs) / 2 * 16
        #expect(h.audio(Array(clip.samples[..<half])).types == ["input_audio_buffer.speech_started"])
        #expect(h.client(#"{"type":"input_audio_buffer.clear"}"#).types == ["input_audio_buffer.cleared"])
        // The rest of the sentence is a new turn; the cleared half is no item.
        let rest = h.audio(Array(clip.samples[half...]))
        #expect(rest.types.first == "input_audio_buffer.speech_started")
        #expect(rest.types.filter { $0 == "input_audio_buffer.committed" }.count == 1)
    }

    @Test func idleSessionHoldsNoAudioAndListeningHoldsOnlyThePadding() throws {
        var h = try EngineHarness()
        _ = h.start()
        #expect(h.engine.accountedBytes == 0)
        _ = h.audio((0..<250).map { _ in [Int16](repeating: 0, count: 320) })  // 5 s of silence in 20 ms chunks
        // 300 ms of padding and 300 ms of margin, up to twice that between trims: not the 5 s.
        #expect(h.engine.accountedBytes < 64_000)
    }

    @Test func audioIsReleasedAtCommitAndCappedAt30Seconds() throws {
        var h = try EngineHarness.manual()
        let second = [Int16](repeating: 200, count: 16_000)
        _ = h.audio(second)
        #expect(h.engine.accountedBytes >= 32_000)
        for _ in 0..<39 { _ = h.audio(second) }
        // 40 s appended; at most 31 s held.
        #expect(h.engine.accountedBytes <= 31 * 32_000 + 64 * 1024)
        _ = h.client(#"{"type":"input_audio_buffer.commit"}"#)
        // All 40 s count toward the item, though only 30 were kept.
        #expect(h.engine.history.last?.spokenMilliseconds == 40_000)
        #expect(h.engine.accountedBytes < 1024)
    }

    @Test func switchingToServerVADMidSessionCountsFromTheSessionsStart() throws {
        var h = try EngineHarness.manual()
        _ = h.audio([Int16](repeating: 0, count: 32_000))  // 2 s before VAD is on
        _ = h.client(#"{"type":"input_audio_buffer.clear"}"#)
        _ = h.client(#"{"type":"session.update","session":{"turn_detection":{"type":"server_vad","prefix_padding_ms":0}}}"#)
        let clip = try SpeechClip.make(Self.question)
        let actions = h.audio(clip.chunks(ms: 20))
        guard case .speechStarted(let startMs, _) = actions.events.first?.kind else { Issue.record("\(actions.types)"); return }
        #expect(abs(startMs - (2000 + clip.speechStartMs)) <= 150)
    }
}
