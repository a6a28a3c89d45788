import Testing
@testable import Session
@testable import SessionEngine

/// The echo guard's gate as a value: levels in, verdicts out, no audio and no sockets.
@Suite struct EchoGateTests {
    @Test func withoutReplyAudioEverythingPasses() {
        var gate = EchoGate()
        for level in [-70.0, -40, -20, -6] { #expect(gate.frame(referenceDB: -120, inputDB: level) == .open) }
        #expect(!gate.replyAudible)
    }

    @Test func theReplysEchoAtMinus10dBIsHeldDownToTheRoom() {
        var gate = EchoGate()
        // A quiet room first: its level is where held frames go.
        for _ in 0..<400 { _ = gate.frame(referenceDB: -120, inputDB: -60) }
        #expect(abs(gate.floorDB - -60) < 1)
        // The reply at -20 dBFS, its echo 10 dB down (and at most 3 dB louder at a peak).
        for i in 0..<200 {
            let verdict = gate.frame(referenceDB: -20, inputDB: i % 7 == 0 ? -27 : -30)
            guard case .held(let gain) = verdict else { Issue.record("frame \(i): \(verdict)"); return }
            // -30 dB input brought to -60: a gain of about 0.03.
            if i % 7 != 0 { #expect(abs(gain - 0.0316) < 0.002) }
        }
    }

    @Test func theUserAtTheReplysLevelPassesAndTheHangoverKeepsTheWordsEnds() {
        var gate = EchoGate()
        for _ in 0..<40 { _ = gate.frame(referenceDB: -20, inputDB: -30) }
        #expect(gate.frame(referenceDB: -20, inputDB: -18) == .passed)
        // 200 ms of hangover: the quieter end of the word (at the echo's own level) still passes.
        for _ in 0..<20 { #expect(gate.frame(referenceDB: -20, inputDB: -30) == .passed) }
        if case .held = gate.frame(referenceDB: -20, inputDB: -30) {} else { Issue.record("the hangover outlasted 200 ms") }
    }

    @Test func theGateThresholdIsSixDBUnderTheLoudestRecentReference() {
        var gate = EchoGate()
        // A loud frame of the reply 300 ms ago still sets the bar: its echo may be arriving now.
        _ = gate.frame(referenceDB: -10, inputDB: -70)
        for _ in 0..<29 { _ = gate.frame(referenceDB: -40, inputDB: -70) }
        if case .held = gate.frame(referenceDB: -40, inputDB: -17) {} else { Issue.record("-17 dB passed under a -10 dB reference") }
        #expect(gate.frame(referenceDB: -40, inputDB: -15) == .passed)
    }

    @Test func theGateStaysOnForTheEchoTailAfterTheReplyEnds() {
        var gate = EchoGate()
        for _ in 0..<50 { _ = gate.frame(referenceDB: -20, inputDB: -30) }
        // The reply has ended; its echo goes on arriving for the path's delay.
        for i in 0..<39 {
            if case .held = gate.frame(referenceDB: -120, inputDB: -30) {} else { Issue.record("frame \(i) after the end was not held") }
        }
        #expect(gate.frame(referenceDB: -120, inputDB: -30) == .open)
        #expect(!gate.replyAudible)
    }

    @Test func heldFramesAreNeverAmplified() {
        var gate = EchoGate()
        for _ in 0..<100 { _ = gate.frame(referenceDB: -120, inputDB: -40) }
        // Echo quieter than the room: left as it is (gain 1), not raised to the floor.
        #expect(gate.frame(referenceDB: -20, inputDB: -50) == .held(gain: 1))
    }
}
