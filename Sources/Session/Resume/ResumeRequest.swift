import Server

/// What a connecting client asked of resume: nothing (clients that never ask, the official SDKs
/// among them, see only the Realtime API's events), a resumable session (`?resume=1` or
/// `Parley-Resume: 1`), or its session back (`?resume_token=rt_…&last_seq=N`, or the headers
/// `Parley-Resume-Token` and `Parley-Last-Seq`).
enum ResumeRequest: Equatable {
    case none
    case resumable
    case resume(token: String, lastSeq: Int)

    /// A malformed token or sequence number is refused with 400 before the upgrade; whether a
    /// well-formed token names a session is only learnt after it (the store may be remote).
    static func parse(_ request: HTTPRequest) -> Result<ResumeRequest, HTTPRefusal> {
        let token = request.queryValue("resume_token").map(String.init) ?? request.header("parley-resume-token")
        let last = request.queryValue("last_seq").map(String.init) ?? request.header("parley-last-seq")
        if let token {
            guard ResumeToken.isWellFormed(token) else { return .failure(refusal("resume_token_malformed", "resume_token is not a token this server issued")) }
            guard let last, let seq = Int(last), seq >= 0 else {
                return .failure(refusal("last_seq_invalid", "last_seq must be the number of the last event received (0 for none)"))
            }
            return .success(.resume(token: token, lastSeq: seq))
        }
        if last != nil { return .failure(refusal("last_seq_invalid", "last_seq needs a resume_token")) }
        let asked = request.queryValue("resume").map(String.init) ?? request.header("parley-resume")
        return .success(asked == "1" || asked == "true" ? .resumable : .none)
    }

    private static func refusal(_ code: String, _ message: String) -> HTTPRefusal {
        HTTPRefusal(.jsonError(.badRequest, code: code, message: message))
    }
}
