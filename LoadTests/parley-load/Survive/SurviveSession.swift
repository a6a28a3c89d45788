/// One survive session's state as the client keeps it: its connection and resume token, the seq
/// it has, the turn in flight, and the items it was told were done. Kept in one array indexed by
/// the pool's slot.
struct SurviveSession {
    enum State {
        case connecting, opening, ready, backoff
        /// Refused at open for its tenant's limit (HTTP 429): opens afresh every 5 s.
        case tenantWait
        case dead
    }

    enum TurnKind { case text, weather, spoken }

    /// A spoken turn's reply as it arrives: its response and item, the audio and transcript
    /// received for it, and whether this turn's reply is to be cut.
    struct SpokenReply {
        var responseID: String?
        var itemID: String?
        /// Samples at 24 kHz.
        var samples = 0
        var transcript = ""
        let cutDue: Bool
        var cutSent = false

        var milliseconds: Int { samples / 24 }

        mutating func heard(_ delta: String) {
            if transcript.count + delta.count <= SurviveSpokenCut.maxTranscriptCharacters { transcript += delta }
        }
    }

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
    /// From session.resumed to the end of its replay, the last replayed event included: what
    /// the replay's events would have the client send waits for `replayFinished`, which sends
    /// what the server does not have, once.
    var inReplay = false
    /// A session.resumed came and no numbered event since: a gap here, or within the replay,
    /// is the documented one of a resume from the store after a node's crash (only
    /// completions are kept there).
    var resumedJustNow = false
    /// Its session.created came (at its first open, or a later one after a tenant refusal).
    var everOpened = false
    /// The session.update it sends at open (tools, spoken settings) went out; turns wait for its
    /// session.updated. True from the start for a session with nothing to set.
    var updateSent = false
    var configured = false
    var turns = 0
    var turnKind = TurnKind.text
    var turnSentAt: UInt64 = 0
    /// Our id for a text turn's user item; the server's (from input_audio_buffer.committed) for a
    /// spoken one, empty until it comes.
    var turnItemID = ""
    var turnUserSeen = false
    var turnResponseSeen = false
    var turnDeadline: UInt64 = 0
    var turnNudged = false
    /// The turn's events as this client saw them (reported if it goes unanswered).
    var turnStory = SurviveTurnStory()
    var pendingTurn = false
    /// A weather turn's calls and outputs.
    var tool: SurviveToolTurn?
    /// A spoken turn's reply in flight.
    var reply: SpokenReply?
    /// The spoken replies this session cut, until the run's end (a few a session).
    var cuts: [SurviveSpokenCut] = []
    /// Item ids the client was told were done, in order.
    var done: [String] = []
    var doneSet: Set<String> = []
    var checksLeft = 0
}
