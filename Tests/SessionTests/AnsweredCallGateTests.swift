import Testing
@testable import SessionEngine

/// What a placed call's session does about who answered (`AnsweredCallGate`), on the synthetic
/// calls of `AnsweringMachineDetectorTests`: each frame's index is the frame, so what the session
/// hears, and when, is read off the actions.
@Suite struct AnsweredCallGateTests {
    typealias Gate = AnsweredCallGate<Int>
    typealias Detector = AnsweringMachineDetectorTests

    struct Run {
        var heard: [Int] = []
        var verdict: AnsweringMachineDetector.Verdict?
        var silencedAt: Int?
        var saidAt: Int?
        var message: String?
        var hungUpAt: Int?
    }

    /// The call through the gate, 20 ms a frame; `messageTakesFrames` after the message is said,
    /// it has been heard out.
    static func run(_ call: [Int16], _ policy: AnsweringMachinePolicy, messageTakesFrames: Int = 100) -> Run {
        var gate = Gate(policy: policy)
        var run = Run()
        func carry(_ actions: [Gate.Action], at index: Int) {
            for action in actions {
                switch action {
                case .hear(let frames): run.heard += frames
                case .decided(let verdict): run.verdict = verdict
                case .silence: run.silencedAt = index
                case .say(let message): (run.saidAt, run.message) = (index, message)
                case .hangUp: run.hungUpAt = index
                }
            }
        }
        for index in 0..<(call.count / 160) {
            carry(gate.heard(index, samples: Array(call[(index * 160)..<(index * 160 + 160)])), at: index)
            if let said = run.saidAt, index == said + messageTakesFrames { carry(gate.messageSaid(), at: index) }
        }
        return run
    }

    static let leave = AnsweringMachinePolicy(onMachine: .leaveMessage, message: "This is Parley calling about your order.")

    @Test func byDefaultThePersonIsHeardFromTheFirstFrameAndTheVerdictOnlySaysWhoItWas() throws {
        let call = Detector.line(try Detector.said("Hello, who is this?", Detector.voices[0]))
        let run = Self.run(call, AnsweringMachinePolicy())
        #expect(run.verdict?.answer == .human)
        #expect(run.heard == Array(0..<(call.count / 160)), "every frame, in order, as it came")
        #expect(run.silencedAt == nil && run.saidAt == nil && run.hungUpAt == nil)
    }

    @Test func listeningHoldsTheAudioUntilTheVerdictThenGivesItAllInOrder() throws {
        let call = Detector.line(try Detector.said("Hello?", Detector.voices[1]))
        var gate = Gate(policy: AnsweringMachinePolicy(untilDecided: .listen))
        var heard: [Int] = []
        var decidedAt: Int?
        for index in 0..<(call.count / 160) {
            for action in gate.heard(index, samples: Array(call[(index * 160)..<(index * 160 + 160)])) {
                if case .hear(let frames) = action {
                    if decidedAt == nil { #expect(frames.count > 1, "nothing is heard before the verdict") }
                    heard += frames
                }
                if case .decided = action { decidedAt = index }
            }
        }
        #expect(decidedAt != nil)
        #expect(heard == Array(0..<(call.count / 160)), "nothing lost, nothing reordered")
    }

    @Test func aMachineIsHungUpOnAtItsVerdictWhenThePolicySaysSo() throws {
        let call = Detector.line(try Detector.said(Detector.greetings[0], Detector.voices[2]) + Detector.beep())
        let run = Self.run(call, AnsweringMachinePolicy(onMachine: .hangUp, untilDecided: .listen))
        #expect(run.verdict?.answer == .machine)
        #expect(run.hungUpAt != nil && run.hungUpAt == run.silencedAt)
        #expect(run.heard.isEmpty, "listening: the greeting never reached the session")
    }

    @Test func theMessageIsLeftAfterTheBeepInEveryVoiceAndThenTheCallEnds() throws {
        for voice in Detector.voices {
            for text in Detector.greetings {
                let greeting = try Detector.said(text, voice)
                let call = Detector.line(greeting + Detector.beep(), tail: 6_000)
                let beepEnds = (2_400 + greeting.count + 4_000) / 160
                let run = Self.run(call, Self.leave)
                #expect(run.verdict?.answer == .machine, "\(voice)")
                #expect(run.silencedAt != nil && run.silencedAt == run.verdict.map { $0.afterMs / 20 - 1 }, "silenced at the verdict's frame")
                #expect(run.message == Self.leave.message)
                // Said once the beep has ended (within two frames), not during the greeting.
                #expect(run.saidAt.map { (beepEnds...(beepEnds + 2)).contains($0) } == true, "\(text.prefix(20)) in \(voice): said at \(String(describing: run.saidAt)), the beep ends at \(beepEnds)")
                #expect(run.hungUpAt == run.saidAt.map { $0 + 100 }, "hung up once it was heard out")
                #expect(run.heard.allSatisfy { $0 <= (run.silencedAt ?? 0) }, "the session hears nothing after the verdict")
            }
        }
    }

    @Test func withNoBeepTheMessageFollowsTheGreetingsSilenceAndAGreetingThatNeverEndsIsNotWaitedOnForever() throws {
        let greeting = try Detector.said(Detector.greetings[1], Detector.voices[3])
        let run = Self.run(Detector.line(greeting, tail: 4_000), Self.leave)
        let greetingEnds = (2_400 + greeting.count) / 160
        #expect(run.saidAt.map { $0 > greetingEnds && $0 <= greetingEnds + 1_600 / 20 } == true, "said at \(String(describing: run.saidAt)), greeting ends \(greetingEnds)")

        var endless: [Int16] = []
        while endless.count < 8 * 30_000 { endless += greeting }
        let long = Self.run(Detector.line(endless, tail: 0), Self.leave)
        let decided = (long.verdict?.afterMs ?? 0) / 20
        #expect(long.saidAt == decided - 1 + CueListener.maxCueWaitMs / 20, "the longest wait, from the verdict")
    }

    @Test func aBeepThatDecidedItIsTheCueOnceItEnds() throws {
        let call = Detector.line(try Detector.said("Leave a message.", Detector.voices[0]) + Detector.beep(ms: 800), tail: 2_000)
        let run = Self.run(call, Self.leave)
        #expect(run.verdict?.reason == "beep")
        let beepStartsMs = call.count / 8 - 2_000 - 800
        #expect(run.saidAt.map { abs($0 * 20 - (beepStartsMs + 800)) <= 60 } == true, "said at \(String(describing: run.saidAt.map { $0 * 20 })) ms, the beep ends at \(beepStartsMs + 800)")
    }
}
