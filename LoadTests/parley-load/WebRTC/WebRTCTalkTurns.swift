/// A talking caller's turns, as a value: speak the recording (one 20 ms frame a tick), then wait
/// for the reply (its `output_audio_buffer.started` and `.stopped` on the data channel), pause,
/// and speak again. Silence between is not sent at all (Opus DTX, RFC 7587 section 3.1.3: a
/// browser stops sending while the microphone is quiet), which is also what a silent caller does
/// all along. Times are nanoseconds on the monotonic clock, passed in.
struct WebRTCTalkTurns: Equatable {
    enum Phase: Equatable {
        /// Sending frame `next` of the recording.
        case speaking(next: Int)
        /// The recording is out; the reply has not begun.
        case awaitingReply(since: UInt64)
        case hearingReply(since: UInt64)
        /// Quiet until the time given.
        case pausing(until: UInt64)
    }

    let frames: Int
    let pause: UInt64
    /// How long a reply may take to begin, or to finish, before the caller speaks again anyway: a
    /// server that drops a turn must not silence the caller for the rest of the run.
    let replyTimeout: UInt64
    private(set) var phase: Phase
    private(set) var turnsSpoken = 0
    private(set) var repliesHeard = 0
    private(set) var repliesMissed = 0

    /// `startAt`: when the first turn begins (callers are staggered so their frames do not all go
    /// out in the same tick). With `greeted`, the caller first listens to the greeting it asked
    /// for, as a person would, and speaks a pause after it ends.
    init(frames: Int, pause: UInt64, replyTimeout: UInt64, startAt: UInt64, greeted: Bool = false) {
        self.frames = max(1, frames)
        self.pause = pause
        self.replyTimeout = replyTimeout
        phase = greeted ? .awaitingReply(since: startAt) : .pausing(until: startAt)
    }

    /// The frame of the recording to send in this tick, if any.
    mutating func tick(now: UInt64) -> Int? {
        switch phase {
        case .speaking(let next):
            phase = next + 1 >= frames ? .awaitingReply(since: now) : .speaking(next: next + 1)
            if next + 1 >= frames { turnsSpoken += 1 }
            return next
        case .awaitingReply(let since), .hearingReply(let since):
            if now >= since &+ replyTimeout {
                repliesMissed += 1
                phase = .pausing(until: now &+ pause)
            }
            return nil
        case .pausing(let until):
            guard now >= until else { return nil }
            phase = frames > 1 ? .speaking(next: 1) : .awaitingReply(since: now)
            if frames == 1 { turnsSpoken += 1 }
            return 0
        }
    }

    mutating func replyStarted(now: UInt64) {
        if case .awaitingReply = phase { phase = .hearingReply(since: now) }
    }

    /// The reply ended (stopped, or cleared): a pause, then the next turn.
    mutating func replyEnded(now: UInt64) {
        switch phase {
        case .awaitingReply, .hearingReply:
            repliesHeard += 1
            phase = .pausing(until: now &+ pause)
        case .speaking, .pausing:
            break
        }
    }

    var isSpeaking: Bool {
        if case .speaking = phase { return true }
        return false
    }
}
