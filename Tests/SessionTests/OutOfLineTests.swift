import Testing
@testable import Session
@testable import SessionEngine

/// What an idle session holds (issue 26: an idle agent session in 1 KiB): the state of turns and
/// replies, the conversation, non-default settings and the speech detector live out of line and
/// exist only while they hold something (`OutOfLine`).
@Suite struct OutOfLineTests {
    private struct Counter: RestingState, Sendable, Equatable {
        var count = 0
        static let resting = Counter()
        var isResting: Bool { count == 0 }
    }

    @Test func aBoxIsMadeOnTheFirstWriteAndGivenBackAtRest() {
        var state = OutOfLine<Counter>()
        #expect(!state.isHeld && state.value.count == 0)
        state.value.count += 2
        #expect(state.isHeld && state.value.count == 2)
        state.settle()
        #expect(state.isHeld, "not at rest: kept")
        state.value.count = 0
        #expect(state.isHeld, "given back only by settle, not on every write")
        state.settle()
        #expect(!state.isHeld && state.value.count == 0)
    }

    @Test func copiesShareTheBoxUntilOneChanges() {
        var a = OutOfLine<Counter>()
        a.value.count = 1
        var b = a
        b.value.count += 1
        #expect(a.value.count == 1 && b.value.count == 2)
        a.value.count = 5
        #expect(a.value.count == 5 && b.value.count == 2)
    }

    @Test func fieldsAreReachedByNameAndWrittenInPlace() {
        var state = OutOfLine<Counter>()
        #expect(state.count == 0 && !state.isHeld, "reading a field makes no box")
        state.count += 3
        #expect(state.count == 3 && state.isHeld)
    }

    @Test func theEnginesTurnsRestWhenEveryFieldDoes() {
        var turns = SessionEngine.Turns.resting
        #expect(turns.isResting)
        turns.partialTranscript = "hello"
        #expect(!turns.isResting)
        turns.partialTranscript = ""
        turns.turnAwaitingResponse = true
        #expect(!turns.isResting)
    }

    @Test func theDriversWorkInFlightRestsWhenEveryFieldDoes() {
        let work = SessionDriver.InFlight()
        #expect(work.isResting)
        work.clock.toolCalled("call_1", at: 1)
        #expect(!work.isResting, "a tool call being timed is in flight")
        _ = work.clock.toolReturned("call_1", at: 2)
        #expect(work.isResting)
    }

    @Test func anOptionalIsAtRestWhenNil() {
        var detector = OutOfLine<Int?>()
        #expect(detector.value == nil && !detector.isHeld)
        detector.value = 3
        detector.settle()
        #expect(detector.isHeld && detector.value == 3)
        detector.value = nil
        detector.settle()
        #expect(!detector.isHeld)
    }

    @Test func aNewSessionHoldsNothingOutOfLine() throws {
        var h = try EngineHarness()
        _ = h.start()
        #expect(h.engine.heldOutOfLine == (settings: false, history: false, detector: false, turns: false))
    }

    @Test func aTextTurnHoldsItsStateWhileItRunsAndGivesItBackWhenDone() throws {
        var h = try EngineHarness()
        _ = h.start()
        let said = h.say("What is 12 times 7?")
        guard case .conversationItemCreated(let question, _)? = said.events.first?.kind else {
            Issue.record("no item created: \(said.types)")
            return
        }
        #expect(h.engine.heldOutOfLine.history && !h.engine.heldOutOfLine.turns)
        let id = try h.respond()
        #expect(h.engine.heldOutOfLine.turns, "a response in flight")
        _ = h.delta(id, "84.")
        let done = h.finish(id)
        #expect(done.types.last == "response.done")
        let answer = try #require(done.responseDone?.output.first?.id)
        #expect(!h.engine.heldOutOfLine.turns, "nothing in flight once the response is done")
        #expect(h.engine.history.count == 2, "the conversation is kept")
        // The conversation's box goes with its last item.
        for item in [question.id, answer] {
            #expect(h.client(#"{"type":"conversation.item.delete","item_id":"\#(item)"}"#).types == ["conversation.item.deleted"])
        }
        #expect(h.engine.history.isEmpty && !h.engine.heldOutOfLine.history)
    }

    @Test func settingsAreHeldOnlyWhileTheyDifferFromTheDefaults() throws {
        var h = try EngineHarness()
        _ = h.start()
        _ = h.client(#"{"type":"session.update","session":{"type":"realtime","instructions":"Be brief."}}"#)
        #expect(h.engine.heldOutOfLine.settings && h.engine.configuration.instructions == "Be brief.")
        _ = h.client(#"{"type":"session.update","session":{"type":"realtime","instructions":""}}"#)
        #expect(!h.engine.heldOutOfLine.settings && h.engine.configuration == SessionConfiguration())
    }

    @Test func theDetectorComesWithAudioAndGoesWhenItStopsBetweenTurns() throws {
        var h = try EngineHarness()
        _ = h.start()
        _ = h.audio([Int16](repeating: 0, count: 320))
        #expect(h.engine.heldOutOfLine.detector, "made with the first audio")
        h.engine.audioWentIdle()
        #expect(!h.engine.heldOutOfLine.detector, "let go between turns")

        // A turn heard after that is heard as before: a fresh detector, its clock the session's.
        let clip = try SpeechClip.make("Hello there, how are you today?", silenceMs: 800)
        let actions = h.audio(clip.chunks(ms: 20))
        let events = actions.events
        guard let started = events.first(where: { if case .speechStarted = $0.kind { true } else { false } }),
              case .speechStarted(let startMs, _) = started.kind else {
            Issue.record("no speech_started: \(actions.types)")
            return
        }
        // 20 ms of silence came first; the clip's speech starts at 800 ms into the clip.
        #expect(abs(startMs - (20 + clip.speechStartMs)) <= 400, "speech_started at \(startMs) ms")
        #expect(actions.types.contains("input_audio_buffer.speech_stopped"))
    }
}
