import JSON

/// What `parley talk` keeps to get its session back after the socket drops (docs/protocol.md,
/// "Resume"): the newest token, the seq of the last event seen, how far it acknowledged, and when
/// to try again. Pure, so that its decisions are tested without a server or a clock.
struct TalkResume: Equatable {
    /// The token that works now (each is single-use: `session.resumed` brings the next one); nil
    /// before the server gave one, or once the session is lost.
    private(set) var token: String?
    private(set) var lastSeq = 0
    private(set) var ackedSeq = 0
    /// How long the server keeps a dropped session (its `grace_seconds`).
    private(set) var graceSeconds = 30.0

    /// What an event means for the connection.
    enum Outcome: Equatable {
        case none
        case resumed(replayed: Int)
        /// The server no longer has the session (or not from `lastSeq`): only a new one is left.
        case lost(String)
    }

    /// The codes that end a session on the server as well (a close both sides agreed on, or one for
    /// the client's fault); any other close, or none at all, leaves it parked for the grace window.
    static let sessionEnds: Set<UInt16> = [1000, 1002, 1003, 1007, 1008, 1009]

    static func parks(closeCode: UInt16?) -> Bool {
        closeCode.map { !sessionEnds.contains($0) } ?? true
    }

    /// Notes one event from the server.
    mutating func note(_ event: JSON) -> Outcome {
        if let seq = event["seq"]?.int { lastSeq = seq }
        switch event["type"]?.string {
        case "session.resume_token":
            // The newest wins: a draining server sends a fresh one just before it closes with 1012.
            token = event["token"]?.string ?? token
            graceSeconds = event["grace_seconds"]?.double ?? graceSeconds
        case "session.resumed":
            token = event["token"]?.string
            return .resumed(replayed: event["replayed"]?.int ?? 0)
        case "error":
            let error = event["error"]
            guard let code = error?["code"]?.string, code == "resume_token_invalid" || code == "resume_out_of_range" else { break }
            forget()
            return .lost(error?["message"]?.string ?? code)
        default:
            break
        }
        return .none
    }

    /// The `session.ack` to send, when events came since the last one (so that the server can let
    /// its replay log go).
    mutating func ack() -> String? {
        guard lastSeq > ackedSeq else { return nil }
        ackedSeq = lastSeq
        return #"{"type":"session.ack","seq":\#(lastSeq)}"#
    }

    /// The wait before reconnect attempt `attempt` (0 first): 0.25 s, 0.5 s, 1 s, … at most 4 s;
    /// nil when the session cannot be resumed, or the attempt would come after the grace window
    /// (`elapsed` seconds since the drop), when the server has let the session go.
    func delay(attempt: Int, elapsed: Double) -> Double? {
        guard token != nil else { return nil }
        let wait = min(4, 0.25 * Double(1 << min(attempt, 5)))
        return elapsed + wait < graceSeconds ? wait : nil
    }

    /// Where to connect: `path` asking for a resumable session, or for this one back.
    func target(_ path: String) -> String {
        let join = path.contains("?") ? "&" : "?"
        guard let token else { return path + join + "resume=1" }
        return path + join + "resume_token=\(token)&last_seq=\(lastSeq)"
    }

    /// Starts over: the next connection asks for a new session.
    mutating func forget() {
        self = TalkResume()
    }
}
