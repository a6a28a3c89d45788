/// What a survive run counts as it goes: the summary is made from these alone.
struct SurviveCounts {
    var created = 0
    var turnsSent = 0
    var turnsCompleted = 0
    var turnsResent = 0
    var responsesNudged = 0
    var turnsUnanswered = 0
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
    var lostExamples: [String] = []
    var openAtEnd = 0
    var connectSeconds = 0.0
}
