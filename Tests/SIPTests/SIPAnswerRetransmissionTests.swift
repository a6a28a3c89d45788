import Testing
@testable import SIP

/// RFC 3261 section 13.3.1.4: a 2xx to an INVITE resent at T1 doubling to T2 until 64*T1.
@Suite struct SIPAnswerRetransmissionTests {
    static let ms: UInt64 = 1_000_000

    /// When each resend goes out (ms since the first 2xx), and when the core gives up.
    static func run(_ timers: SIPTimers) -> (resends: [UInt64], gaveUpAt: UInt64) {
        var machine = SIPAnswerRetransmission(timers: timers)
        var now = machine.firstWait
        var resends: [UInt64] = []
        while case .resend(let next) = machine.fired() {
            resends.append(now / ms)
            now += next
            #expect(resends.count < 100, "a schedule that never gives up")
            if resends.count >= 100 { break }
        }
        return (resends, now / ms)
    }

    @Test func resendsAtT1DoublingToT2AndGivesUpAt64T1() {
        let (resends, gaveUpAt) = Self.run(SIPTimers())
        #expect(resends == [500, 1_500, 3_500, 7_500, 11_500, 15_500, 19_500, 23_500, 27_500, 31_500])
        #expect(gaveUpAt == 32_000)
    }

    @Test func aLargerT1StretchesTheWholeSchedule() {
        // T1 of 1 s (a long link): 64 s in all, resends capped at T2 (4 s).
        let (resends, gaveUpAt) = Self.run(SIPTimers(t1: 1_000 * Self.ms))
        #expect(Array(resends.prefix(4)) == [1_000, 3_000, 7_000, 11_000])
        #expect(zip(resends, resends.dropFirst()).allSatisfy { $1 - $0 <= 4_000 })
        #expect(gaveUpAt == 64_000)
    }

    @Test func aGivenUpScheduleStaysGivenUp() {
        var machine = SIPAnswerRetransmission()
        while case .resend = machine.fired() {}
        #expect(machine.fired() == .giveUp)
    }
}
