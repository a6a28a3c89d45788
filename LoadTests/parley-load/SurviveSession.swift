/// One survive session's state as the client keeps it: its connection and resume token, the seq
/// it has, the turn in flight, and the items it was told were done. Kept in one array indexed by
/// the pool's slot.
struct SurviveSession {
    enum State { case connecting, opening, ready, backoff, dead }

    var state = State.connecting
    var connection: ClientConnection?
    var attemptStartedAt: UInt64 = 0
    var token: String?
    var lastSeq = 0
    var ackedSeq = 0
    /// When the current outage began (the first drop); 0 when connected.
    var droppedAt: UInt64 = 0
    var attempts = 0
    var retryAt: UInt64 = 0
    /// Events of the replay still to come after session.resumed.
    var replayLeft = 0
    /// A session.resumed came and no numbered event since: a gap here, or within the replay,
    /// is the documented one of a resume from the store after a node's crash (only
    /// completions are kept there).
    var resumedJustNow = false
    var turns = 0
    var turnSentAt: UInt64 = 0
    var turnItemID = ""
    var turnUserSeen = false
    var turnResponseSeen = false
    var turnDeadline: UInt64 = 0
    var turnNudged = false
    var pendingTurn = false
    /// Item ids the client was told were done, in order.
    var done: [String] = []
    var doneSet: Set<String> = []
    var checksLeft = 0
}
