@testable import Session
import Testing

/// The recording's clock without sockets: each side lands where its time says, jitter does not
/// open gaps, silence between sends is filled, a cut reply loses what was to play after the cut,
/// and nothing from before the recording began is kept.
struct CallRecordingTests {
    /// 16 kHz: 16 samples a millisecond, 320 a frame.
    static let start: UInt64 = 10_000_000_000
    static func at(ms: Int) -> UInt64 { start + UInt64(ms) * 1_000_000 }
    static func tone(_ ms: Int, _ value: Int16) -> [Int16] { [Int16](repeating: value, count: 16 * ms) }

    func split(_ stereo: [Int16]) -> (left: [Int16], right: [Int16]) {
        (stride(from: 0, to: stereo.count, by: 2).map { stereo[$0] }, stride(from: 1, to: stereo.count, by: 2).map { stereo[$0] })
    }

    @Test func bothSidesLandWhereTheirTimesSay() {
        var call = CallRecording(rate: 16_000, startedAt: Self.start)
        // The caller streams 20 ms frames from 0 to 400 ms, each a little late (jitter).
        for n in 0..<20 { call.caller(Self.tone(20, 100), startsAt: Self.at(ms: n * 20 + (n % 3) * 7)) }
        // The agent's reply plays from 600 ms for 300 ms.
        call.agent(Self.tone(300, 200), playsAt: Self.at(ms: 600))
        let (left, right) = split(call.take(before: Self.at(ms: 1_000)))
        #expect(left.count == 16_000 && right.count == 16_000)
        // The caller's 400 ms with no gap opened by the jitter, then zeros.
        #expect(left[0..<6_400].allSatisfy { $0 == 100 } && left[6_400...].allSatisfy { $0 == 0 })
        #expect(right[0..<9_600].allSatisfy { $0 == 0 } && right[9_600..<14_400].allSatisfy { $0 == 200 } && right[14_400...].allSatisfy { $0 == 0 })
    }

    @Test func aReplyCutByABargeInEndsAtTheCut() {
        var call = CallRecording(rate: 16_000, startedAt: Self.start)
        // A reply sent 2 s ahead of its playing (its lead), cut 500 ms into it.
        call.agent(Self.tone(2_000, 300), playsAt: Self.at(ms: 300))
        call.cutAgent(at: Self.at(ms: 800))
        let (_, right) = split(call.takeAll())
        #expect(right.count == 16 * 800)
        #expect(right[0..<4_800].allSatisfy { $0 == 0 } && right[4_800...].allSatisfy { $0 == 300 })
    }

    @Test func nothingFromBeforeTheRecordingBegan() {
        var call = CallRecording(rate: 16_000, startedAt: Self.start)
        // A frame that began 10 ms before the recording: only its last 10 ms are the recording's.
        call.caller(Self.tone(10, 1) + Self.tone(10, 2), startsAt: Self.start - 10_000_000)
        let (left, _) = split(call.takeAll())
        #expect(left.count == 320 && left[0..<160].allSatisfy { $0 == 2 } && left[160...].allSatisfy { $0 == 0 })
    }

    @Test func takingGivesWholeFramesAndKeepsTheRest() {
        var call = CallRecording(rate: 16_000, startedAt: Self.start)
        call.caller(Self.tone(100, 5), startsAt: Self.start)
        // 50 ms: two whole frames (40 ms) are final, the rest waits.
        #expect(call.take(before: Self.at(ms: 50)).count == 2 * 640)
        #expect(call.heldSamples == 16 * 60)
        let rest = split(call.takeAll()).left
        #expect(rest.count == 16 * 60 && rest.allSatisfy { $0 == 5 })
        #expect(call.take(before: Self.at(ms: 50)).isEmpty && call.takeAll().isEmpty)
    }

    @Test func aSideThatRunsAwayIsBounded() {
        var call = CallRecording(rate: 8_000, startedAt: Self.start)
        // A clock far in the future (a bug, a hostile client) cannot make it hold more than its bound.
        call.agent([1, 2, 3], playsAt: Self.at(ms: 3_600_000))
        #expect(call.heldSamples <= CallRecording.maxPendingSeconds * 8_000)
    }
}
