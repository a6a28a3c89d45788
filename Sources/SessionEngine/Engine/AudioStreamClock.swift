/// How far behind real time a session's audio is being processed. A client streaming at real-time
/// cadence sends frame k at about t0 + k × frame duration; the server processed it at some time
/// after. The clock keeps the earliest alignment seen (arrival − audio so far), which is the
/// client's own clock as closely as the server can know it, so that a server already behind when
/// the stream began is still seen to be behind. A pause of over a second starts a new stream.
package struct AudioStreamClock {
    package static let pauseNanoseconds: UInt64 = 1_000_000_000

    private var origin: UInt64 = 0
    private var audio: UInt64 = 0
    private var lastArrival: UInt64 = 0
    private var streaming = false

    package init() {}

    /// A frame of `duration` nanoseconds of audio arrived at `now`: when, by the stream's clock,
    /// it was due (its first sample's place in real time).
    package mutating func frameArrived(duration: UInt64, at now: UInt64) -> UInt64 {
        if !streaming || now &- lastArrival > Self.pauseNanoseconds {
            streaming = true
            origin = now
            audio = 0
        }
        origin = min(origin, now &- audio)
        let due = origin &+ audio
        audio &+= duration
        lastArrival = now
        return due
    }
}
