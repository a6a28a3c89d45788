import Access
import JSON
import Loop
import Server
import SessionEngine

/// OpenAI's call control (`POST /v1/realtime/calls/{call_id}/accept`, `/reject`, `/refer`,
/// `/hangup`), for whoever may open sessions here (the same key, token or secret): acted on by the
/// call on its own loop (`CallDirectory`). A WebRTC call takes only `hangup`; a SIP call waiting
/// for its webhook's answer takes them all. A body that is not what the action takes is a 400;
/// what the call makes of the action shows on the call itself (its SIP response, its session).
package enum CallControlRoute {
    package static let callsPath = "/v1/realtime/calls"

    /// Whose actions they are: the Realtime API's calls (`accept` takes a Realtime session), or
    /// GPT-Live's sessions (`POST /v1/live/sessions/{id}/…`, `accept` takes a Live one).
    enum API {
        case realtime, live
    }

    static func install(on routes: inout Router.Builder, access: Access, under base: String = callsPath, api: API = .realtime) {
        routes.streamUnder(base + "/", method: "POST") { request, stream in stream.respond(control(request, access: access, base: base, api: api)) }
        routes.streamUnder(base + "/", method: "OPTIONS") { request, stream in stream.respond(preflight(request)) }
        if api == .realtime { routes.streamUnder(base + "/") { request, stream in read(request, stream, access: access, base: base) } }
    }

    /// `GET /v1/realtime/calls/{call_id}` (and a GPT-Live session's, `GET /v1/live/sessions/{id}`):
    /// the call's status and story (`CallLine.document`), read on the call's loop; an ended call's
    /// while it is kept (`KeptCalls`), then 404.
    static func read(_ request: HTTPRequest, _ stream: HTTPResponseStream, access: Access, base: String, api: API = .realtime) {
        let rest = request.path.dropFirst(base.count + 1).split(separator: "/")
        guard rest.count == 1 else { return stream.respond(cors(.jsonError(.notFound, code: "not_found", message: "no such route"), request)) }
        if case .failure(let refusal) = access.identify(request, offered: []) { return stream.respond(cors(refusal.response, request)) }
        let id = String(rest[0])
        guard let entry = CallDirectory.shared.find(id) else {
            return stream.respond(cors(api == .live ? .jsonError(.notFound, code: "session_not_found", message: "no Live session '\(id)' on this server")
                                                    : .jsonError(.notFound, code: "call_not_found", message: "no call '\(id)' on this server"), request))
        }
        let here = stream.loop.handle, line = entry.line, answer = Handoff(stream), object = api == .live ? "live.session" : "realtime.call"
        entry.home.execute {
            let body = line.value.document(object: object).description + "\n"
            here.execute { answer.value.respond(cors(HTTPResponse(status: .ok, contentType: "application/json", body: body), request)) }
        }
    }

    static func control(_ request: HTTPRequest, access: Access, base: String = callsPath, api: API = .realtime) -> HTTPResponse {
        let rest = request.path.dropFirst(base.count + 1).split(separator: "/")
        guard rest.count == 2 else { return cors(.jsonError(.notFound, code: "not_found", message: "no such route"), request) }
        if case .failure(let refusal) = access.identify(request, offered: []) { return cors(refusal.response, request) }
        let action: CallControl
        do throws(ProtocolError) {
            action = try parse(String(rest[1]), body: request.body, api: api)
        } catch {
            return cors(.jsonError(error.code == .unknownEvent ? .notFound : .badRequest, code: error.code.rawValue, message: error.message), request)
        }
        let id = String(rest[0])
        guard CallDirectory.shared.withCall(id, { $0.control(action) }) else {
            return cors(api == .live ? .jsonError(.notFound, code: "session_not_found", message: "no Live session '\(id)' on this server")
                                     : .jsonError(.notFound, code: "call_not_found", message: "no call '\(id)' on this server"), request)
        }
        return cors(HTTPResponse(status: .ok, contentType: "application/json", body: "{}\n"), request)
    }

    /// The action `name` with its body (OpenAI's shapes: accept's session object, `{status_code}`,
    /// `{target_uri}`; hangup's none).
    static func parse(_ name: String, body: [UInt8], api: API = .realtime) throws(ProtocolError) -> CallControl {
        let json: JSON
        if body.isEmpty {
            json = .object([])
        } else {
            guard let parsed = try? JSON(parsing: String(decoding: body, as: UTF8.self)), parsed.object != nil else {
                throw ProtocolError(.invalidJSON, "the body is not a JSON object")
            }
            json = parsed
        }
        let fields = EventFields(json)
        switch name {
        case "hangup":
            return .hangUp
        case "accept" where api == .live:
            // `{"session": {…}}` (`SessionAcceptParams`): the call's media negotiates the format.
            try fields.refuseUnknown(["session"])
            guard let session = try fields.object("session") else { throw fields.missing("session") }
            return .acceptLive(try LiveSessionConfig.parse(session, media: true))
        case "accept":
            if let type = try fields.string("type"), type != "realtime" { throw fields.invalid("type", "must be 'realtime'") }
            return .accept(try SessionUpdate.parse(fields))
        case "reject":
            let status = try fields.integer("status_code", in: 400...699) ?? 603
            return .reject(status: status)
        case "refer":
            let target = try fields.requiredString("target_uri")
            guard target.hasPrefix("tel:") || target.hasPrefix("sip:") || target.hasPrefix("sips:"), target.utf8.count <= 1024,
                  !target.utf8.contains(where: { $0 < 0x21 || $0 == 0x7F }) else {
                throw fields.invalid("target_uri", "must be a tel: or sip: URI")
            }
            return .refer(target: target)
        default:
            throw ProtocolError(.unknownEvent, "no call action '\(name)': accept, reject, refer or hangup")
        }
    }

    // MARK: CORS

    /// A browser on another origin may post offers (the page holds only a client secret) and must
    /// be allowed to read `Location`, where the call's id is (the JavaScript SDK reads it).
    package static func cors(_ response: HTTPResponse, _ request: HTTPRequest) -> HTTPResponse {
        guard request.header("origin") != nil else { return response }
        var response = response
        response.headers += [("Access-Control-Allow-Origin", "*"), ("Access-Control-Expose-Headers", "Location")]
        return response
    }

    package static func preflight(_ request: HTTPRequest) -> HTTPResponse {
        HTTPResponse(status: .noContent, headers: [
            ("Access-Control-Allow-Origin", "*"), ("Access-Control-Allow-Methods", "POST, OPTIONS"),
            ("Access-Control-Allow-Headers", "Authorization, Content-Type, OpenAI-Beta"), ("Access-Control-Max-Age", "600"),
        ])
    }
}
