import Testing
@testable import Session
@testable import SessionEngine

@Suite struct AudioStreamClockTests {
    let frame: UInt64 = 20_000_000  // 20 ms

    @Test func framesArrivingOnTimeAreDueWhenTheyArrive() {
        var clock = AudioStreamClock()
        for k in 0..<50 {
            let now = 1_000_000_000 + UInt64(k) * frame
            #expect(clock.frameArrived(duration: frame, at: now) == now)
        }
    }

    @Test func aFrameReadLateWasDueAtItsPlaceInTheStream() {
        var clock = AudioStreamClock()
        _ = clock.frameArrived(duration: frame, at: 0 + 1_000)
        // The next two frames are read together 30 ms late.
        #expect(clock.frameArrived(duration: frame, at: 1_000 + frame + 30_000_000) == 1_000 + frame)
        #expect(clock.frameArrived(duration: frame, at: 1_000 + frame + 30_000_000) == 1_000 + 2 * frame)
    }

    @Test func aLateStartIsCorrectedByTheFirstFrameThatComesOnTime() {
        var clock = AudioStreamClock()
        let ms: UInt64 = 1_000_000
        // Frames are sent at 0, 20, 40, 60 ms. The first two are read late (the server was busy),
        // the third on time.
        _ = clock.frameArrived(duration: frame, at: 30 * ms)
        _ = clock.frameArrived(duration: frame, at: 31 * ms)
        #expect(clock.frameArrived(duration: frame, at: 40 * ms) == 40 * ms)
        // From then on the stream's clock is the true one: a frame read 5 ms late is 5 ms behind.
        #expect(clock.frameArrived(duration: frame, at: 65 * ms) == 60 * ms)
    }

    @Test func aPauseStartsANewStream() {
        var clock = AudioStreamClock()
        _ = clock.frameArrived(duration: frame, at: 0)
        _ = clock.frameArrived(duration: frame, at: frame)
        let later: UInt64 = 5_000_000_000
        #expect(clock.frameArrived(duration: frame, at: later) == later)
    }
}
