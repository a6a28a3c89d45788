/// What a parsed request gets, decided apart from the connection that carries it out: the route,
/// HEAD served by GET, 405 with its `Allow`, the origin policy, refusals while draining, the
/// WebSocket handshake and the session reservation. The connection's HTTP protocol only writes
/// what is decided here, so every rule about *which* answer lives in this one place.
enum RouteDecision {
    /// Answer now; `keepAlive` already says no while the server drains.
    case respond(HTTPResponse, keepAlive: Bool, includeBody: Bool)
    /// Answer over time through a stream.
    case stream(Router.StreamingHandler, keepAlive: Bool, includeBody: Bool)
    /// Switch protocols: write the 101, then the connection speaks WebSocket to the admission's handler.
    case upgrade(HTTPResponse, Router.WebSocketEndpoint, WebSocketAdmission)
    /// As `upgrade`, once the admission's `confirm` has answered (and a session slot is free).
    case confirmThenUpgrade(HTTPResponse, Router.WebSocketEndpoint, WebSocketAdmission)
    /// Answer, then close: an upgrade turned away (403, 503, the handshake's own refusals).
    case refuse(HTTPResponse)
}

enum RequestRouting {
    /// The decision for `request`. Pure but for `reserveSession`, which takes a session slot and
    /// is called only once every other check has passed, so a refused upgrade holds no slot.
    static func decide(_ request: HTTPRequest, router: Router, allowedOrigins: [String]?, draining: Bool,
                       reserveSession: () -> Bool) -> RouteDecision {
        let keepAlive = request.keepAlive && !draining
        guard let route = router.route(request.path) else {
            return .respond(.error(.notFound), keepAlive: keepAlive, includeBody: true)
        }
        switch route {
        case .http(let methods):
            return serve(request, methods, keepAlive: keepAlive)
        case .webSocket(_, let methods) where !methods.isEmpty && request.header("upgrade")?.lowercased() != "websocket":
            return serve(request, methods, keepAlive: keepAlive)
        case .webSocket(let endpoint, _):
            if let allowedOrigins, let origin = request.header("origin"),
               !allowedOrigins.contains(where: { $0.lowercased() == origin.lowercased() }) {
                serverLog.info("upgrade refused", metadata: ["path": "\(request.path)", "status": "403", "reason": "origin"])
                return .refuse(.jsonError(.forbidden, code: "origin_not_allowed", message: "this server does not accept sessions from pages at \(origin)"))
            }
            if draining {
                // This node takes no new sessions; the balancer sends the client elsewhere.
                serverLog.info("upgrade refused", metadata: ["path": "\(request.path)", "status": "503", "reason": "draining"])
                return .refuse(.jsonError(.serviceUnavailable, code: "draining", message: "this server is restarting; connect again",
                                          headers: [("Retry-After", "1")]))
            }
            switch WebSocketHandshake.evaluate(request, admit: endpoint.admit) {
            case .refuse(let response):
                serverLog.info("upgrade refused", metadata: ["path": "\(request.path)", "status": "\(response.status.code)"])
                return .refuse(response)
            case .accept(let response, let admission) where admission.confirm != nil:
                // The session slot is taken once the confirmation comes (`reserveOrRefuse`).
                return .confirmThenUpgrade(response, endpoint, admission)
            case .accept(let response, let admission):
                if let refusal = reserveOrRefuse(request, reserveSession) { return .refuse(refusal) }
                return .upgrade(response, endpoint, admission)
            }
        }
    }

    /// A plain request's responder by its method; HEAD is GET's without the body; else 405.
    private static func serve(_ request: HTTPRequest, _ methods: [String: Router.Responder], keepAlive: Bool) -> RouteDecision {
        let isHead = request.method == "HEAD"
        guard let responder = methods[isHead ? "GET" : request.method] else {
            let allowed = methods.keys.sorted() + (methods["GET"] != nil ? ["HEAD"] : [])
            return .respond(.error(.methodNotAllowed, headers: [("Allow", allowed.joined(separator: ", "))]),
                            keepAlive: keepAlive, includeBody: true)
        }
        switch responder {
        case .complete(let serve):
            return .respond(serve(request), keepAlive: keepAlive, includeBody: !isHead)
        case .streaming(let serve):
            return .stream(serve, keepAlive: keepAlive, includeBody: !isHead)
        }
    }

    /// Takes a session slot, or says why there is none (the process's session cap).
    static func reserveOrRefuse(_ request: HTTPRequest, _ reserveSession: () -> Bool) -> HTTPResponse? {
        guard !reserveSession() else { return nil }
        serverLog.info("upgrade refused", metadata: ["path": "\(request.path)", "status": "503", "reason": "session_limit"])
        return .error(.serviceUnavailable, headers: [("Retry-After", "1")])
    }

    /// A confirmation's refusal, logged as the others are.
    static func refused(_ request: HTTPRequest, _ refusal: HTTPRefusal) -> HTTPResponse {
        serverLog.info("upgrade refused", metadata: ["path": "\(request.path)", "status": "\(refusal.response.status.code)"])
        return refusal.response
    }
}
