/// What a lost connection means for a resumable session, by the close the server sent (if any),
/// as docs/protocol.md documents them ("Resume", "Errors", "WebSocket (RFC 6455)") and the server
/// sends them: a drop to resume from, a documented end, or something no document explains, which
/// fails the run whether or not the session could be resumed after it.
enum SurviveClose: Equatable {
    /// No close frame (EOF, a reset, a timeout), or one that parks the session: 1001 (shut down,
    /// or the drain's deadline), 1012 (drained: resume elsewhere), 1013 (the store could not
    /// answer a resume: try again with the same token). Reconnect with resume.
    case drop
    /// A close the server documents as the session's end, with its reason.
    case ended(String)
    /// Documented, but for a fault of this client (1002 a framing error, 1003, 1007 text not
    /// UTF-8, 1009 a message too large): the session is over, and the client has a bug.
    case clientFault(String)
    /// A code or reason no document gives. `resumes`: the server parks the session after such a
    /// code (it ends only for 1000, 1002, 1003, 1007, 1008 and 1009), so it is resumed.
    case undocumented(String, resumes: Bool)

    /// The reasons the server gives with 1008: a refused resume, a limit (events, audio pace,
    /// session length, tokens), a transcription session without a recogniser, a client not reading.
    static let documentedPolicyReasons: Set<String> = [
        "resume_token_invalid", "resume_out_of_range", "rate_limit_exceeded", "audio_too_fast", "token_limit_exceeded",
        "session length limit", "no transcriber", "not reading: outbound queue over its cap",
    ]

    /// `code` nil: the connection went without a close frame.
    static func classify(code: UInt16?, reason: String) -> SurviveClose {
        guard let code else { return .drop }
        let said = "\(code)" + (reason.isEmpty ? "" : " \(reason)")
        switch code {
        case 1001, 1012, 1013:
            return .drop
        case 1008:
            return documentedPolicyReasons.contains(reason) ? .ended(said) : .undocumented(said, resumes: false)
        case 1002, 1003, 1007, 1009:
            return .clientFault(said)
        case 1000:
            // Only a Twilio call's stop ends with the server's 1000; a Realtime session never does.
            return .undocumented(said, resumes: false)
        default:
            return .undocumented(said, resumes: true)
        }
    }
}
