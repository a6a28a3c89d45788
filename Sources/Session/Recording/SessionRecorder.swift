import Loop

/// A session's recording while it runs: its two sides on one clock (`CallRecording`), handed to
/// the recording thread a second at a time. Made when a session asks to be recorded (on a server
/// that allows it), ended when it asks to stop, parks or closes.
final class SessionRecorder {
    private var call: CallRecording
    private let file: RecordingFile
    private let recordings: Recordings
    private var flush: ScheduledTask?

    /// What is held back before it is encoded: a reply is cut at the time of its barge-in, and
    /// audio up to this far behind is still the caller's late arrival, not yet final.
    static let settleNanoseconds: UInt64 = 500_000_000
    static let flushSeconds = 1.0

    init(recordings: Recordings, sessionID: String, rate: Int, now: UInt64, loop: EventLoop) {
        self.recordings = recordings
        call = CallRecording(rate: rate, startedAt: now)
        file = recordings.begin(sessionID: sessionID, rate: rate)
        schedule(on: loop)
    }

    var rate: Int { call.rate }
    var heldBytes: Int { call.heldSamples * 2 }

    func caller(_ samples: [Int16], startsAt time: UInt64) { call.caller(samples, startsAt: time) }
    func agent(_ samples: [Int16], playsAt time: UInt64) { call.agent(samples, playsAt: time) }
    func cutAgent(at time: UInt64) { call.cutAgent(at: time) }

    /// The rest, and the file closed. What a reply sent ahead of `now` is never heard: the
    /// listener has gone, or no longer asks for a recording.
    func finish(at now: UInt64) {
        flush?.cancel()
        flush = nil
        call.cutAgent(at: now)
        recordings.finish(call.takeAll(), file)
    }

    private func schedule(on loop: EventLoop) {
        flush = loop.schedule(after: Self.flushSeconds) { [weak self, weak loop] in
            guard let self, let loop else { return }
            let now = loop.nanoseconds()
            recordings.write(call.take(before: now > Self.settleNanoseconds ? now - Self.settleNanoseconds : 0), to: file)
            schedule(on: loop)
        }
    }
}
