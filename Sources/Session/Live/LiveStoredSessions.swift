import Access
import Loop
import Server
import SessionEngine

/// Stored GPT-Live sessions (`store: true`) as their owners reach them: looked up for a fork, and
/// their recording downloaded (`GET /v1/live/sessions/{id}/content`). A session is stored when it
/// ends; one still open, another tenant's, or past its retention is not found (404), never told
/// apart, so an id says nothing to whoever does not own it.
package enum LiveStoredSessions {
    /// The stored session `id`, if `caller`'s; `done` runs on `loop`.
    package static func find(_ id: String, for caller: Caller, endpoint: RealtimeEndpoint, on loop: EventLoop,
                             _ done: @escaping (Result<LiveStoredSession, HTTPRefusal>) -> Void) {
        guard SessionReports.isSessionID(Substring(id)) else { return done(.failure(notFound(id))) }
        endpoint.liveSessions.read(id: id, on: loop) { result in
            switch result {
            case .failure(let error):
                done(.failure(HTTPRefusal(.jsonError(.serviceUnavailable, code: "store_unavailable", message: "the stored session could not be read: \(error)"))))
            case .success(let text):
                guard let text, let stored = LiveStoredSession.parse(text), stored.tenant == (caller.tenant ?? "") else { return done(.failure(notFound(id))) }
                done(.success(stored))
            }
        }
    }

    static func notFound(_ id: String) -> HTTPRefusal {
        HTTPRefusal(.jsonError(.notFound, code: "session_not_found",
                               message: "no stored Live session '\(id)': unknown, not stored (store: false), still open, or past its retention"))
    }

    /// `GET …/{id}/content`: the session's recording, Ogg Opus (docs/operations.md, "Recordings").
    static func download(_ id: String, request: HTTPRequest, stream: HTTPResponseStream, endpoint: RealtimeEndpoint) {
        let caller: Caller
        switch endpoint.access.identify(request, offered: []) {
        case .failure(let refusal): return stream.respond(CallControlRoute.cors(refusal.response, request))
        case .success(let identified): caller = identified
        }
        let loop = stream.loop
        find(id, for: caller, endpoint: endpoint, on: loop) { found in
            switch found {
            case .failure(let refusal):
                stream.respond(CallControlRoute.cors(refusal.response, request))
            case .success(let stored):
                guard let recordings = endpoint.recordings, let name = stored.recording else {
                    return stream.respond(CallControlRoute.cors(.jsonError(.notFound, code: "recording_not_found",
                                                                           message: "session '\(id)' has no recording: this server records only with --recordings"), request))
                }
                recordings.read(name, on: loop) { bytes in
                    guard let bytes else {
                        return stream.respond(CallControlRoute.cors(.jsonError(.notFound, code: "recording_not_found",
                                                                               message: "the recording of session '\(id)' is gone (past its retention) or cannot be read now"), request))
                    }
                    stream.respond(CallControlRoute.cors(HTTPResponse(status: .ok, headers: [("Content-Type", "audio/ogg")], body: bytes), request))
                }
            }
        }
    }
}
