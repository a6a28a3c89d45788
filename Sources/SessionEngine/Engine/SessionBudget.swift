/// What one session may spend, server-wide settings (`parley serve --max-events-per-second`,
/// `--max-session-minutes`): past them the session gets an `error` event naming the limit and is
/// closed with 1008 (policy violation).
public struct SessionLimits: Sendable, Equatable {
    /// Client events (and audio frames) a second, averaged over a two-second burst.
    public var eventsPerSecond = 200
    /// Audio may arrive at most this much faster than real time, once it is 30 s ahead (a recorded
    /// turn may be sent at once): a client that streams a recording faster makes the server do
    /// work no live speaker would.
    public var audioRealTimeFactor = 1.5
    /// The longest session; nil: no limit.
    public var maxSessionSeconds: Double? = 3600
    /// Model tokens a session may spend, input and output as each `response.done` reports them
    /// (`--max-session-tokens`); the response that passes it is delivered, then the session closed.
    public var maxSessionTokens: Int?
    /// A session's conversation history, in bytes of text (`--max-history-bytes`; see
    /// `ConversationHistory`); a session may ask for less (`max_history_bytes`).
    public var maxHistoryBytes = 32 * 1024

    public init() {}
}

/// A session's running account against its limits: a token bucket for events, and the pace of its
/// audio. A value, fed the time, so every rule is a unit test.
package struct SessionBudget {
    package enum Exceeded: Equatable {
        case events, audio, tokens

        package var code: String {
            switch self {
            case .events: "rate_limit_exceeded"
            case .audio: "audio_too_fast"
            case .tokens: "token_limit_exceeded"
            }
        }

        package var label: String { "\(self)" }
    }

    package static let audioAllowanceNanoseconds: UInt64 = 30_000_000_000
    /// A pause this long starts the pace afresh, as the audio clock does.
    package static let audioPauseNanoseconds: UInt64 = 1_000_000_000

    private var tokens: Double
    private var refilledAt: UInt64
    private var audioStart: UInt64 = 0
    private var audioNanoseconds: UInt64 = 0
    private var lastAudio: UInt64 = 0

    package init(limits: SessionLimits, now: UInt64) {
        tokens = Double(limits.eventsPerSecond) * 2
        refilledAt = now
    }

    /// One client event or audio frame at `now`; false once the rate is over the limit.
    package mutating func event(at now: UInt64, limits: SessionLimits) -> Bool {
        let rate = Double(limits.eventsPerSecond)
        tokens = min(rate * 2, tokens + Double(now &- refilledAt) / 1e9 * rate)
        refilledAt = now
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }

    /// `duration` nanoseconds of audio arrived at `now`; false when the stream runs faster than
    /// the limit allows.
    package mutating func audio(_ duration: UInt64, at now: UInt64, limits: SessionLimits) -> Bool {
        if audioNanoseconds == 0 || now &- lastAudio > Self.audioPauseNanoseconds {
            audioStart = now
            audioNanoseconds = 0
        }
        lastAudio = now
        audioNanoseconds &+= duration
        let allowed = Double(now &- audioStart) * limits.audioRealTimeFactor + Double(Self.audioAllowanceNanoseconds)
        return Double(audioNanoseconds) <= allowed
    }
}
