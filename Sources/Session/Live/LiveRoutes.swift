import Access
import Server
import SessionEngine

/// GPT-Live's routes (docs/protocol.md, "GPT-Live"), for the same keys, tokens and client secrets
/// as the Realtime API's: the primary WebSocket `/v1/live/sessions`; under it, by session id, the
/// sideband (`WS …/{id}/attach`), a stored session's fork (`WS …/{id}/fork`, and `POST …/{id}/fork`
/// with a WebRTC offer), its state and story (`GET …/{id}`), its recording (`GET …/{id}/content`)
/// and the session-scoped call control
/// (`POST …/{id}/hangup`, and for SIP calls accept, reject and refer).
package enum LiveRoutes {
    package static let path = "/v1/live/sessions"

    /// A WebRTC fork (`POST …/{id}/fork`): the request, its stream, and the stored session's id.
    package typealias WebRTCFork = @Sendable (HTTPRequest, HTTPResponseStream, String) -> Void

    static func install(on routes: inout Router.Builder, endpoint: RealtimeEndpoint) {
        routes.webSocket(path, name: "live") { request, offered in
            endpoint.access.admit(request, offered: offered, resuming: false, held: { _ in false }).map { admitted in
                let handler = LiveSessionHandler(endpoint: endpoint, request: request, admitted: admitted)
                return WebSocketAdmission(subprotocol: nil, handler: handler, confirm: confirm(admitted),
                                          maxMessageBytes: LiveSessionHandler.maxMessageBytes)
            }
        }
        installPost(on: &routes, endpoint: endpoint, fork: nil)
        routes.streamUnder(path + "/", method: "OPTIONS") { request, stream in stream.respond(CallControlRoute.preflight(request)) }
        routes.streamUnder(path + "/") { request, stream in
            // `GET …/{id}`: a placed or called session's state and story, as a call's.
            if !request.path.dropFirst(path.count + 1).contains("/") {
                return CallControlRoute.read(request, stream, access: endpoint.access, base: path, api: .live)
            }
            guard let (id, action) = idAndAction(request), action == "content" else { return stream.respond(notFound(request)) }
            LiveStoredSessions.download(id, request: request, stream: stream, endpoint: endpoint)
        }
        routes.webSocketUnder(path + "/", name: "live-sideband") { request, offered in
            guard let (id, action) = idAndAction(request), action == "attach" || action == "fork" else {
                return .failure(HTTPRefusal(notFound(request)))
            }
            if action == "fork" { return fork(id, request: request, offered: offered, endpoint: endpoint) }
            // A sideband is the session's: it takes no place of its own in the tenant's count.
            return endpoint.access.identify(request, offered: offered).flatMap { _ in
                guard let entry = CallDirectory.shared.find(id) else {
                    return .failure(HTTPRefusal(.jsonError(.notFound, code: "session_not_found", message: "no Live session '\(id)' on this server")))
                }
                return .success(WebSocketAdmission(subprotocol: nil, handler: SidebandHandler(entry)))
            }
        }
    }

    /// `POST …/{id}/{action}`: a fork (given `fork`, by the WebRTC endpoint, which installs this
    /// again with it) or call control. One handler serves the prefix: the last installed.
    package static func installPost(on routes: inout Router.Builder, endpoint: RealtimeEndpoint, fork: WebRTCFork?) {
        routes.streamUnder(path + "/", method: "POST") { request, stream in
            if let (id, action) = idAndAction(request), action == "fork" {
                guard let fork else {
                    return stream.respond(CallControlRoute.cors(.jsonError(.notFound, code: "webrtc_disabled", message: "this server takes no WebRTC offers: fork over the WebSocket, \(path)/\(id)/fork"), request))
                }
                return fork(request, stream, id)
            }
            stream.respond(CallControlRoute.control(request, access: endpoint.access, base: path, api: .live))
        }
    }

    /// The session id and the action of `…/{id}/{action}`.
    static func idAndAction(_ request: HTTPRequest) -> (String, Substring)? {
        let rest = request.path.dropFirst(path.count + 1).split(separator: "/", omittingEmptySubsequences: false)
        guard rest.count == 2, !rest[0].isEmpty else { return nil }
        return (String(rest[0]), rest[1])
    }

    private static func notFound(_ request: HTTPRequest) -> HTTPResponse {
        CallControlRoute.cors(.jsonError(.notFound, code: "not_found", message: "no such route"), request)
    }

    /// The tenant's shared count, when there is one, answers before the upgrade.
    private static func confirm(_ admitted: Admitted) -> WebSocketAdmission.Confirm? {
        admitted.needsConfirmation ? { loop, done in admitted.confirm(session: nil, resuming: nil, on: loop, done) } : nil
    }

    /// `WS …/{id}/fork`: a Live session of its own (a place in the tenant's count), which starts
    /// from the stored session `id` once it is found for this caller; its `session.start` gives
    /// overrides of it.
    private static func fork(_ id: String, request: HTTPRequest, offered: [String], endpoint: RealtimeEndpoint) -> Result<WebSocketAdmission, HTTPRefusal> {
        endpoint.access.admit(request, offered: offered, resuming: false, held: { _ in false }).map { admitted in
            let handler = LiveSessionHandler(endpoint: endpoint, request: request, admitted: admitted)
            let count = confirm(admitted)
            return WebSocketAdmission(subprotocol: nil, handler: handler, confirm: { loop, done in
                LiveStoredSessions.find(id, for: admitted.caller, endpoint: endpoint, on: loop) { found in
                    switch found {
                    case .failure(let refusal): done(refusal)
                    case .success(let stored):
                        handler.session.forking = stored
                        if let count { count(loop, done) } else { done(nil) }
                    }
                }
            }, maxMessageBytes: LiveSessionHandler.maxMessageBytes)
        }
    }
}
