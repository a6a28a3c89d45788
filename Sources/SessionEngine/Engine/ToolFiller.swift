/// Whether the agent says a short filler ("One moment, let me check.") while a tool runs: an
/// MCP call the server makes, or a client's function whose output has not come back. A caller
/// who hears nothing for seconds thinks the line dropped; one who hears the same filler twice,
/// or a filler over their own words, thinks the agent is broken. So:
///
/// - only after the tool has run `afterMs` (a fast tool needs none), and only on a spoken session;
/// - never while the user speaks (`due` is told; the moment passes, it is not said later);
/// - never twice in a row: once said, not again until the agent or the user says something else.
///
/// A value with no clock: the engine asks for a timer (`began` answers the token to arm) and is
/// told when it ran out (`due`). Unit-tested in `ToolFillerTests`.
public struct ToolFiller: Sendable, Equatable {
    public struct Settings: Sendable, Equatable {
        /// What is said; empty turns fillers off.
        public var phrase: String
        /// How long a tool runs before it is said.
        public var afterMs: Int

        public init(phrase: String = "One moment, let me check.", afterMs: Int = 1500) {
            self.phrase = phrase
            self.afterMs = afterMs
        }

        public static let off = Settings(phrase: "", afterMs: 0)
        public var isOn: Bool { !phrase.isEmpty }
    }

    /// The timer armed, while a tool runs.
    private(set) var armed: Int?
    private var tokens = 0
    /// The agent's last words were a filler.
    private(set) var lastWasFiller = false

    public init() {}

    /// A tool began running: the timer's token and length to arm, unless one is armed (or
    /// fillers are off, or the session does not speak).
    package mutating func began(_ settings: Settings, speaks: Bool) -> ToolWaitStep? {
        guard settings.isOn, speaks, armed == nil else { return nil }
        tokens &+= 1
        armed = tokens
        return .arm(token: tokens, afterMs: settings.afterMs)
    }

    /// Every tool has returned: the timer, if armed, is not wanted.
    package mutating func ended() -> ToolWaitStep? {
        guard armed != nil else { return nil }
        armed = nil
        return .disarm
    }

    /// The timer `token` ran out: whether to say the filler now.
    package mutating func due(_ token: Int, userSpeaking: Bool) -> Bool {
        guard armed == token else { return false }
        armed = nil
        guard !userSpeaking, !lastWasFiller else { return false }
        lastWasFiller = true
        return true
    }

    /// Someone said something other than a filler: the next long tool may have one again.
    package mutating func somethingElseSaid() {
        lastWasFiller = false
    }
}
