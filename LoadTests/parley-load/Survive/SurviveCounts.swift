/// What a survive run counts as it goes: the summary is made from these alone.
struct SurviveCounts {
    var created = 0
    var turnsSent = 0
    var turnsCompleted = 0
    var turnsResent = 0
    var responsesNudged = 0
    var turnsUnanswered = 0
    /// The stories of the first turns unanswered (SurviveTurnStory).
    var unansweredExamples: [String] = []
    var turnsSkipped = 0
    var statuses: [String: Int] = [:]
    var turnLatency = LatencyRecorder()
    var itemDoneEvents = 0
    var responseDoneEvents = 0
    var drops: [String: Int] = [:]
    var reconnectFailures: [String: Int] = [:]
    var resumes = 0
    var replayedEvents = 0
    var resumeFailures: [String: Int] = [:]
    var ended: [String: Int] = [:]
    var resumeLatency = LatencyRecorder()
    var seqGaps = 0
    /// Gaps at a resume: after a node's crash the store replays the completions alone
    /// (docs/protocol.md, "Resume"); counted, not a problem.
    var seqGapsAtResume = 0
    var seqDuplicates = 0
    var errors: [String: Int] = [:]
    var itemsChecked = 0
    var itemsRetrieved = 0
    var itemsLost = 0
    var itemsUnreachable = 0
    /// Items of sessions that were never resumable and ended (see `SurviveRun.check`).
    var itemsOnEndedSessions = 0
    var lostExamples: [String] = []
    var openAtEnd = 0
    var connectSeconds = 0.0

    // Every response.done, whatever turn it ends (replays included): its status, and what is
    // wrong with it (a status the API does not have, a failure without its error).
    var responseDoneStatuses: [String: Int] = [:]
    var responseStatusViolations: [String: Int] = [:]

    // Closes: every close frame the server sent (code and reason), and those no document gives or
    // that blame this client.
    var closes: [String: Int] = [:]
    var closesUndocumented: [String: Int] = [:]
    var closesClientFault: [String: Int] = [:]

    // Tool turns (--tools): every third text turn asks for the weather.
    var toolTurnsSent = 0
    var toolTurnsCompleted = 0
    var toolCalls = 0
    var toolOutputsSent = 0
    var toolOutputsResent = 0
    var toolCallsAnswered = 0
    var toolTurnsWithoutCall = 0
    var toolTurnsGaveUp = 0

    // Spoken turns (--spoken).
    var spokenTurnsSent = 0
    var spokenTurnsCompleted = 0
    var spokenTurnsResent = 0
    var spokenTurnLatency = LatencyRecorder()
    var transcriptions = 0
    var transcriptionsFailed = 0
    var spokenReplies = 0
    var spokenRepliesSilent = 0
    var replyAudioSamples = 0
    /// Each spoken reply's audio received, as a duration.
    var replyAudio = LatencyRecorder()

    // Cuts (--cut-every) and their truncation.
    var cutsSent = 0
    var cutsCancelled = 0
    var cutsCompletedFirst = 0
    var cutsFailedUpstream = 0
    var cutsTruncated = 0
    var cutsResent = 0
    var cutsVoided = 0
    var cutsNotMade = 0
    var cutsCheckedAtEnd = 0
    var cancelsTooLate = 0
    var serverTruncations = 0
    var truncationViolations: [String: Int] = [:]
    var truncationExamples: [String] = []

    // The limited tenant (--tenant-key).
    var tenantRefusals = 0
    var tenantResumeRefusals = 0
    var tenantTimeline = SurviveTenantTimeline()

    /// Distinct keys past which a count table of reasons (close reasons, error codes) stops
    /// growing: a server that varied them could not grow the client's memory.
    static let maxReasons = 64

    /// Adds one to `key` in `table`, or to "other" once the table holds `maxReasons` keys.
    static func add(_ key: String, to table: inout [String: Int]) {
        let key = table[key] != nil || table.count < maxReasons ? key : "other"
        table[key, default: 0] += 1
    }

    mutating func truncationViolation(_ kind: String, _ example: String) {
        Self.add(kind, to: &truncationViolations)
        if truncationExamples.count < 10 { truncationExamples.append(example) }
    }
}
