import SessionEngine
/// When a session's turns happened, in monotonic nanoseconds: the moments the driver's timing
/// metrics and the turn's stage timeline (`TurnTimeline`) are measured from. Fed facts and the
/// driver's own marks with their times; answers the durations to record. A value with no clock of
/// its own, so each measure is a unit test; at rest (equal to a new one) between turns.
struct TurnClock: Sendable, Equatable, RestingState {
    /// Issue 24's measure of a premature reply: the user went on within a second.
    static let prematureEndMs = 1_000
    /// The most tool calls timed at once (a response's parallel calls are a few at most).
    static let maxCallsOut = 16

    /// When the last turn ended (`speech_stopped`), until its response began.
    private var speechStoppedAt: UInt64?
    /// When the user stopped speaking before the reply now to be spoken, for voice-to-voice time.
    private(set) var replyTurnStoppedAt: UInt64?
    /// The last turn's stages, from its last word until its reply's first frame (or first token,
    /// for a text reply), then observed and dropped.
    private(set) var timeline: TurnTimeline?
    /// Where (in the input's audio milliseconds) the last turn's speech ended, until the user's
    /// next speech: speech again within `prematureEndMs` was a pause mid-turn.
    private var turnEndedAtMs: Int?
    /// When each of the model's calls was handed to the client, until its output comes back.
    private var callsOut: [CallOut] = []

    private struct CallOut: Sendable, Equatable {
        let callID: String
        let at: UInt64
    }

    static let resting = TurnClock()
    var isResting: Bool { self == Self.resting }

    /// The turn ended at `audioEndMs` of audio, observed at `now` when the audio had reached
    /// `audioMs`: returns when its last word was heard (as many milliseconds ago as the audio
    /// since it lasts, the client streaming in real time).
    mutating func turnEnded(itemID: String, audioEndMs: Int, audioMs: Int, at now: UInt64) -> UInt64 {
        speechStoppedAt = now
        turnEndedAtMs = audioEndMs
        var turn = TurnTimeline()
        let lastWord = now &- UInt64(max(0, audioMs - audioEndMs)) * 1_000_000
        turn.mark(.lastWord, at: lastWord)
        turn.mark(.turnEnd, at: now)
        turn.itemID = itemID
        timeline = turn
        return lastWord
    }

    /// A turn began at `audioStartMs` (its onset less up to `paddingMs` of padding): whether it
    /// came so soon after the last one ended that it was the same turn, cut at a pause.
    mutating func turnBegan(audioStartMs: Int, paddingMs: Int) -> Bool {
        defer { turnEndedAtMs = nil }
        guard let ended = turnEndedAtMs else { return false }
        return audioStartMs + paddingMs - ended <= Self.prematureEndMs
    }

    /// A response began: how long after its turn ended, if one did.
    mutating func responseBegan(at now: UInt64) -> UInt64? {
        defer {
            replyTurnStoppedAt = speechStoppedAt
            speechStoppedAt = nil
        }
        return speechStoppedAt.map { now &- $0 }
    }

    /// The reply's speech begins: when its turn ended, taken (one reply per turn).
    mutating func takeReplyTurnStoppedAt() -> UInt64? {
        defer { replyTurnStoppedAt = nil }
        return replyTurnStoppedAt
    }

    /// The transcript came: how long after its turn ended, if it is the last turn's.
    mutating func transcribed(at now: UInt64) -> UInt64? {
        timeline?.mark(.transcript, at: now)
        return speechStoppedAt.map { now &- $0 }
    }

    mutating func toolCalled(_ callID: String, at now: UInt64) {
        if callsOut.count >= Self.maxCallsOut { callsOut.removeFirst() }
        callsOut.append(CallOut(callID: callID, at: now))
    }

    /// The call's output came back: the client's time on it.
    mutating func toolReturned(_ callID: String, at now: UInt64) -> UInt64? {
        guard let index = callsOut.firstIndex(where: { $0.callID == callID }) else { return nil }
        return now &- callsOut.remove(at: index).at
    }

    /// The filler was said while a tool ran (the turn's timeline shows when).
    mutating func fillerSaid(at now: UInt64) {
        if timeline?.fillerAt == nil { timeline?.fillerAt = now }
    }

    /// A stage of the current turn's timeline passed.
    mutating func mark(_ mark: TurnTimeline.Mark, at now: UInt64) {
        timeline?.mark(mark, at: now)
    }

    /// The model's request for `responseID` went out (or a speculative one was used).
    mutating func modelRequested(_ responseID: String, at now: UInt64) {
        if timeline?.has(.modelRequest) == false { timeline?.responseID = responseID }
        timeline?.mark(.modelRequest, at: now)
    }

    /// Whether the model's first words are the turn's still to mark.
    var awaitsFirstToken: Bool { timeline?.has(.modelRequest) == true && timeline?.has(.firstToken) == false }

    /// The timeline is complete: handed over to be observed, and dropped.
    mutating func takeTimeline() -> TurnTimeline? {
        defer { timeline = nil }
        return timeline
    }
}
