/// A call's two sides laid on one clock, for a stereo recording: the caller left, the agent right.
/// A value with no I/O: the driver feeds it what the caller sent and what the agent played, with
/// the monotonic times they belong at, and takes interleaved stereo blocks as they become final.
///
/// Each side is written where its time says, but contiguously: audio that arrives up to `slack`
/// after the end of what that side already has is its continuation (a network's jitter must not
/// open gaps in a voice), and a longer silence (a client that sends nothing while its user is
/// quiet, the agent between replies) is filled with zeros so that the sides stay aligned.
///
/// Nothing from before the recording began is kept: a call's audio is recorded from the moment the
/// session asked.
struct CallRecording {
    let rate: Int
    /// When the recording began (monotonic nanoseconds): sample 0 of both channels.
    let startedAt: UInt64
    /// Samples (per channel) already taken; both channels' pending audio starts here.
    private(set) var taken = 0
    private var caller: [Int16] = []
    private var agent: [Int16] = []

    /// 100 ms: more than a network's jitter between 20 ms frames, less than a pause anyone hears.
    static let slackMs = 100
    /// What a side may hold ahead of what has been taken (a reply is sent at most a few seconds
    /// ahead of its playing); the rest is dropped, so that a misbehaving clock cannot grow memory.
    static let maxPendingSeconds = 30

    init(rate: Int, startedAt: UInt64) {
        self.rate = rate
        self.startedAt = startedAt
    }

    var frameSamples: Int { rate / 50 }

    /// Samples from the start to `time` (0 before it).
    func position(_ time: UInt64) -> Int {
        time > startedAt ? Int((time - startedAt) / 1_000) * rate / 1_000_000 : 0
    }

    /// What the caller sent, which began at `time`.
    mutating func caller(_ samples: [Int16], startsAt time: UInt64) {
        place(samples, at: time, into: &caller)
    }

    /// What the agent's reply plays from `time` (ahead of now, by the reply's lead).
    mutating func agent(_ samples: [Int16], playsAt time: UInt64) {
        place(samples, at: time, into: &agent)
    }

    /// The reply was cut at `time` (a barge-in, a cancel): what was to play after it never did.
    mutating func cutAgent(at time: UInt64) {
        let keep = max(0, position(time) - taken)
        if agent.count > keep { agent.removeLast(agent.count - keep) }
    }

    /// Interleaved stereo for the whole frames that end by `time`; both sides are final there.
    mutating func take(before time: UInt64) -> [Int16] {
        let whole = (position(time) - taken) / frameSamples * frameSamples
        return whole > 0 ? take(whole) : []
    }

    /// Everything still held, padded to a whole frame: the end of the recording.
    mutating func takeAll() -> [Int16] {
        let longest = max(caller.count, agent.count)
        return take((longest + frameSamples - 1) / frameSamples * frameSamples)
    }

    /// Samples held, both sides, for the connection's memory account.
    var heldSamples: Int { caller.count + agent.count }

    private mutating func take(_ count: Int) -> [Int16] {
        guard count > 0 else { return [] }
        var out = [Int16](repeating: 0, count: count * 2)
        for i in 0..<min(count, caller.count) { out[2 * i] = caller[i] }
        for i in 0..<min(count, agent.count) { out[2 * i + 1] = agent[i] }
        caller.removeFirst(min(count, caller.count))
        agent.removeFirst(min(count, agent.count))
        taken += count
        return out
    }

    private func place(_ samples: [Int16], at time: UInt64, into side: inout [Int16]) {
        var samples = samples[...]
        // Audio from before the recording began is not the recording's.
        if time < startedAt {
            let before = Int((startedAt - time) / 1_000) * rate / 1_000_000
            samples = samples.dropFirst(before)
        }
        let start = position(time) - taken
        let limit = Self.maxPendingSeconds * rate
        let gap = min(start - side.count, limit - side.count)
        if gap > Self.slackMs * rate / 1_000 { side.append(contentsOf: repeatElement(0, count: gap)) }
        side.append(contentsOf: samples.prefix(max(0, limit - side.count)))
    }
}
