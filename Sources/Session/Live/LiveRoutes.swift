import Access
import Server

/// GPT-Live's routes (docs/protocol.md, "GPT-Live"): the primary WebSocket `/v1/live/sessions`
/// and a session's sideband `/v1/live/sessions/{id}/attach`, for the same keys, tokens and client
/// secrets as the Realtime API's.
package enum LiveRoutes {
    package static let path = "/v1/live/sessions"

    static func install(on routes: inout Router.Builder, endpoint: RealtimeEndpoint) {
        routes.webSocket(path, name: "live") { request, offered in
            endpoint.access.admit(request, offered: offered, resuming: false, held: { _ in false }).map { admitted in
                WebSocketAdmission(subprotocol: nil, handler: LiveSessionHandler(endpoint: endpoint, request: request, admitted: admitted),
                                   confirm: admitted.needsConfirmation ? { loop, done in admitted.confirm(session: nil, resuming: nil, on: loop, done) } : nil,
                                   maxMessageBytes: LiveSessionHandler.maxMessageBytes)
            }
        }
        // Session-scoped call control: `POST /v1/live/sessions/{id}/hangup` (and, for SIP calls,
        // accept, reject and refer), as `client.live.sessions` sends it.
        CallControlRoute.install(on: &routes, access: endpoint.access, under: path, api: .live)
        // A sideband is the session's: it takes no place of its own in the tenant's count.
        routes.webSocketUnder(path + "/", name: "live-sideband") { request, offered in
            let rest = request.path.dropFirst(path.count + 1).split(separator: "/", omittingEmptySubsequences: false)
            guard rest.count == 2, rest[1] == "attach" else {
                return .failure(HTTPRefusal(.jsonError(.notFound, code: "not_found", message: "no such route")))
            }
            return endpoint.access.identify(request, offered: offered).flatMap { _ in
                let id = String(rest[0])
                guard let entry = CallDirectory.shared.find(id) else {
                    return .failure(HTTPRefusal(.jsonError(.notFound, code: "session_not_found", message: "no Live session '\(id)' on this server")))
                }
                return .success(WebSocketAdmission(subprotocol: nil, handler: SidebandHandler(entry)))
            }
        }
    }
}
