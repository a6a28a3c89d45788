import Glibc
import JSON
import Loop
import Access
import Media
import Server
import Session
import SessionEngine
import Synchronization
import TLS

/// `POST /v1/realtime/calls`, as OpenAI's Realtime API defines it for browsers: an SDP offer in
/// (raw, `application/sdp`, or `multipart/form-data` with `sdp` and `session` parts), `201 Created`
/// with the answer and `Location: /v1/realtime/calls/{call_id}` out; `POST …/{call_id}/hangup`
/// ends the call (`CallControlRoute`, in Session, shared with SIP's calls). The call is made on the loop that took the offer, and its answer names that
/// loop's UDP port, so its media never leaves that thread.
public final class WebRTCEndpoint: Sendable {
    public struct Settings: Sendable {
        /// The address the answer's candidate names (`--webrtc-public-ip`): the one browsers can
        /// reach, when the server is behind NAT. Nil: the bound address if it is one, else the
        /// address the offer's request was sent to (its Host, when that is a literal), else 127.0.0.1.
        public var publicAddress: String?
        /// Where the media ports bind (`--webrtc-host`).
        public var host = "0.0.0.0"
        /// The UDP ports the loops' media ports take from (`--webrtc-ports`); nil: the kernel's choice.
        public var ports: ClosedRange<Int>?
        /// How long a call waits for its peer's nominated check, and how long after the last check
        /// its peer counts as gone (RFC 7675's 30 s): tests shorten them.
        package var setupTimeoutSeconds = 15.0
        package var consentTimeoutSeconds = 30.0
        public init() {}
    }

    let realtime: RealtimeEndpoint
    let settings: Settings
    let metrics: WebRTCMetrics
    /// Made when the first offer comes: OpenSSL loads then, not at start.
    private let context = Mutex<DTLSContext?>(nil)
    static let callsPath = "/v1/realtime/calls"

    /// Where a JSON body on `/v1/realtime/calls` goes: a phone call to place (SIP's `dialOut`), on
    /// a server that places them.
    package typealias DialOut = @Sendable (HTTPRequest, HTTPResponseStream) -> Void
    let dialOut: DialOut?

    public convenience init(sessions: RealtimeEndpoint, settings: Settings = Settings(), dialOut: (@Sendable (HTTPRequest, HTTPResponseStream) -> Void)? = nil) {
        self.init(sessions: sessions, settings: settings, metrics: .shared, dialOut: dialOut)
    }

    /// With series of its own (a test's), rather than the process's.
    init(sessions: RealtimeEndpoint, settings: Settings, metrics: WebRTCMetrics, dialOut: DialOut? = nil) {
        self.dialOut = dialOut
        realtime = sessions
        self.settings = settings
        self.metrics = metrics
    }

    public func install(on routes: inout Router.Builder) {
        routes.addMetrics(metrics.registry)
        routes.stream("POST", Self.callsPath) { request, stream in self.offer(request, stream) }
        // The older flow: the offer posted to the session's own path (`/v1/realtime?model=…`), the
        // answer the same; its WebSocket upgrades are untouched.
        routes.stream("POST", "/v1/realtime") { request, stream in self.offer(request, stream) }
        routes.stream("OPTIONS", "/v1/realtime") { request, stream in stream.respond(Self.preflight(request)) }
        routes.stream("OPTIONS", Self.callsPath) { request, stream in stream.respond(Self.preflight(request)) }
        // GPT-Live's WebRTC sessions: the offer in a JSON body, the answer in one.
        routes.stream("POST", LiveRoutes.path) { request, stream in self.liveOffer(request, stream) }
        routes.stream("OPTIONS", LiveRoutes.path) { request, stream in stream.respond(Self.preflight(request)) }
        // A stored Live session's fork onto a new call (the prefix's POSTs, call control beside it).
        LiveRoutes.installPost(on: &routes, endpoint: realtime) { request, stream, id in self.liveFork(request, stream, id: id) }
    }

    // MARK: The offer

    private func offer(_ request: HTTPRequest, _ stream: HTTPResponseStream) {
        let loop = stream.loop
        if LoopDrain.on(loop).isDraining { return stream.respond(Self.cors(Self.draining, request)) }
        // Who is asking before what they ask: an unauthorised offer is not parsed.
        if case .failure(let refusal) = realtime.access.identify(request, offered: []) { return stream.respond(Self.cors(refusal.response, request)) }
        // A JSON body is not an offer: it places a phone call (`{"transport": {"type": "sip", …}}`).
        if (request.header("content-type") ?? "").lowercased().hasPrefix("application/json") {
            guard let dialOut else {
                return stream.respond(Self.cors(.jsonError(.badRequest, code: "sip_disabled",
                                                           message: "this server places no phone calls: start it with --sip-port and --sip-trunk NAME=URI"), request))
            }
            return dialOut(request, stream)
        }
        let offer: WebRTCOffer
        let session: JSON?
        switch Self.read(request) {
        case .failure(let refusal):
            metrics.offersRefused.add(1)
            return stream.respond(Self.cors(refusal.response, request))
        case .success(let read): (offer, session) = read
        }
        admit(request, on: loop, respondingOn: stream) { admitted in
            guard stream.isOpen else { return }  // the caller's place goes with `admitted`
            switch self.answer(offer, request, on: loop, converse: self.opening(.realtime(nil), carrier: Self.callsPath, session: session, request, admitted)) {
            case .success(let made):
                let created = HTTPResponse(status: .created, headers: [("Content-Type", "application/sdp"), ("Location", "\(Self.callsPath)/\(made.callID)")],
                                           body: made.sdp)
                stream.respond(Self.cors(created, request))
            case .failure(let refusal):
                stream.respond(Self.cors(refusal.response, request))
            }
        }
    }

    /// Admits a call as an upgrade on `/v1/realtime` is admitted (its key, token or client
    /// secret, its tenant's limits), holding its tenant's place across processes when the count
    /// is shared; `done` gets the admission (which the call's session holds) on `loop`, or answers
    /// the refusal itself.
    func admit(_ request: HTTPRequest, on loop: EventLoop, respondingOn stream: HTTPResponseStream, _ done: @escaping (Admitted) -> Void) {
        switch realtime.access.admit(request, offered: []) {
        case .failure(let refusal):
            stream.respond(Self.cors(refusal.response, request))
        case .success(let admitted):
            guard admitted.needsConfirmation else { return done(admitted) }
            // A call is not resumed: its place is held by no session id.
            admitted.confirm(session: nil, resuming: nil, on: loop) { refusal in
                if let refusal { stream.respond(Self.cors(refusal.response, request)) } else { done(admitted) }
            }
        }
    }

    /// How a call's conversation in `api` is made, the call its leg: a browser's call (the
    /// endpoint's echo guard, the request's dialect and trace), its audio the call's Opus, with
    /// `session` (an offer's `session` part) on top of the request's settings.
    func opening(_ api: CallAPI, carrier: String, session: JSON?, _ request: HTTPRequest, _ admitted: Admitted)
        -> (String, WebRTCCall) -> any CallConversation {
        var options = SessionEngine.Options(realtime: request, endpoint: realtime, caller: admitted.caller, allowsOpus: true, restoring: nil)
        options.carryAudioOnACall(session: session)
        return { [realtime, options] id, call in
            api.conversation(CallOpening(callID: id, endpoint: realtime, admitted: admitted, carrier: carrier, leg: call, options: { _ in options },
                                         isPhoneLine: false, dialect: Dialect(openAIBetaHeader: request.header("openai-beta")),
                                         traceparent: request.header("traceparent")))
        }
    }

    /// The offer and the session's settings from either shape of the request.
    static func read(_ request: HTTPRequest) -> Result<(WebRTCOffer, JSON?), HTTPRefusal> {
        let type = (request.header("content-type") ?? "").lowercased()
        var sdp = request.body
        var session: JSON?
        if type.hasPrefix("multipart/form-data") {
            let form: MultipartFormData
            do throws(MultipartError) { form = try MultipartFormData(body: request.body, contentType: request.header("content-type") ?? "") } catch {
                return .failure(HTTPRefusal(.jsonError(.badRequest, code: "invalid_request", message: "the multipart body does not read: \(error)")))
            }
            guard let part = form.part(named: "sdp") else {
                return .failure(HTTPRefusal(.jsonError(.badRequest, code: "missing_sdp", message: "the multipart body has no 'sdp' part")))
            }
            sdp = part.body
            if let part = form.part(named: "session") {
                guard let json = try? JSON(parsing: String(decoding: part.body, as: UTF8.self)), json.object != nil else {
                    return .failure(HTTPRefusal(.jsonError(.badRequest, code: "invalid_json", message: "the 'session' part must be a JSON object")))
                }
                session = json
            }
        } else if !type.hasPrefix("application/sdp") {
            return .failure(HTTPRefusal(.jsonError(.unsupportedMediaType, code: "unsupported_content_type",
                                                   message: "send the SDP offer as application/sdp, or multipart/form-data with 'sdp' and 'session' parts")))
        }
        return offer(sdp: sdp).map { ($0, session) }
    }

    /// The offer an SDP's bytes make, or the 400 saying what is wrong with them.
    static func offer(sdp: [UInt8]) -> Result<WebRTCOffer, HTTPRefusal> {
        do throws(SDPError) {
            let description = try SessionDescription(parsing: sdp)
            do throws(WebRTCOfferError) {
                return .success(try WebRTCOffer(description))
            } catch {
                return .failure(HTTPRefusal(.jsonError(.badRequest, code: "invalid_offer", message: "\(error)")))
            }
        } catch {
            return .failure(HTTPRefusal(.jsonError(.badRequest, code: "invalid_sdp", message: "\(error)")))
        }
    }

    /// Makes the call on `loop`: its answer SDP and its id, or the response that says why not.
    /// `converse` makes its conversation.
    func answer(_ offer: WebRTCOffer, _ request: HTTPRequest, on loop: EventLoop, converse: (String, WebRTCCall) -> any CallConversation) -> Result<CallAnswer, HTTPRefusal> {
        let calls = loop.local { LoopCalls(loop: loop) }
        let port: MediaPort
        let context: DTLSContext
        let dtls: DTLSEndpoint
        do {
            port = try calls.port(host: settings.host, ports: settings.ports, metrics: metrics)
            context = try dtlsContext()
            guard let fingerprint = DTLSFingerprint(bytes: offer.fingerprint.bytes) else { throw DTLSError.setup("no sha-256 fingerprint") }
            dtls = try DTLSEndpoint(context: context, remoteFingerprint: fingerprint)
        } catch {
            webrtcLog.warning("cannot take a call", metadata: ["error": "\(error)"])
            return .failure(HTTPRefusal(.jsonError(.serviceUnavailable, code: "webrtc_unavailable", message: "this server cannot take WebRTC calls now: \(error)")))
        }
        var local = ICECredentials.generate()
        while port.isExpecting(ufrag: Array(local.ufrag.utf8)) { local = ICECredentials.generate() }
        let random = OpenSSL.randomBytes(20)
        let id = "rtc_" + OpenSSL.hex(random[0..<12])
        let ssrc = random[12..<16].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        var ice = ICELiteAgent.Settings()
        ice.setupTimeout = UInt64(settings.setupTimeoutSeconds * 1e9)
        ice.consentTimeout = UInt64(settings.consentTimeoutSeconds * 1e9)
        let call = WebRTCCall(id: id, port: port, offer: offer, local: local, ice: ice, dtls: dtls, audioSSRC: ssrc, metrics: metrics,
                              now: loop.nanoseconds(), converse: converse)
        _ = port.expect(call, ufrag: call.ufrag)
        call.line.list()
        metrics.callsOpen.add(1)
        let address = advertisedAddress(request, bound: port.local)
        let answer = WebRTCAnswer(offer: offer, iceUfrag: local.ufrag, icePwd: local.password, certificateFingerprint: context.fingerprint.bytes,
                                  candidates: [.init(address: address, port: UInt16(port.local.port))], audioSSRC: ssrc, cname: id,
                                  sessionID: random[16..<20].reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
        call.callLog("call answered on \(address):\(port.local.port)")
        return .success(CallAnswer(sdp: answer.bytes, callID: id, sessionID: call.sessionID))
    }

    /// A call made: its answer SDP, its id and its session's.
    struct CallAnswer {
        let sdp: [UInt8]
        let callID: String
        let sessionID: String
    }

    private func dtlsContext() throws(TLSError) -> DTLSContext {
        try context.withLock { (made: inout DTLSContext?) throws(TLSError) -> DTLSContext in
            if let made { return made }
            let created = try DTLSContext(certificate: DTLSCertificate(), role: .server)
            made = created
            return created
        }
    }

    /// What the answer's candidate names (see `Settings.publicAddress`).
    private func advertisedAddress(_ request: HTTPRequest, bound: SocketAddress) -> String {
        if let publicAddress = settings.publicAddress { return publicAddress }
        let host = bound.numericHost
        if host != "0.0.0.0", host != "::" { return host }
        if let literal = Self.hostLiteral(request.header("host")) { return literal }
        return "127.0.0.1"
    }

    /// The Host header's host when it is an IPv4 literal ("localhost" is 127.0.0.1).
    static func hostLiteral(_ header: String?) -> String? {
        guard let header else { return nil }
        let host = header.split(separator: ":").first.map(String.init) ?? ""
        if host == "localhost" { return "127.0.0.1" }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4, octets.allSatisfy({ UInt8($0) != nil }) else { return nil }
        return host
    }

    static func cors(_ response: HTTPResponse, _ request: HTTPRequest) -> HTTPResponse { CallControlRoute.cors(response, request) }

    /// A draining node takes no new call (its calls go on to the drain's bound): another node will.
    static var draining: HTTPResponse {
        var response = HTTPResponse.jsonError(.serviceUnavailable, code: "draining", message: "this server is draining; place the call on another")
        response.headers.append(("Retry-After", "1"))
        return response
    }
    static func preflight(_ request: HTTPRequest) -> HTTPResponse { CallControlRoute.preflight(request) }
}

/// A loop's media port, bound when its first call comes. (Its calls are held by the port's maps
/// and their sessions; `CallDirectory` finds them by id.)
final class LoopCalls {
    let loop: EventLoop
    private var mediaPort: MediaPort?

    init(loop: EventLoop) { self.loop = loop }

    /// The loop's port, bound when its first call comes.
    func port(host: String, ports: ClosedRange<Int>?, metrics: WebRTCMetrics) throws -> MediaPort {
        if let mediaPort { return mediaPort }
        guard let address = (try? Sys.resolve(host: host, port: 0, passive: true, numericOnly: true))?.first else { throw WebRTCSetupError.badHost(host) }
        let opened = try MediaPort.open(on: loop, host: address, ports: ports, metrics: metrics)
        mediaPort = opened
        return opened
    }
}

enum WebRTCSetupError: Error, CustomStringConvertible {
    case badHost(String)
    var description: String {
        switch self {
        case .badHost(let host): "--webrtc-host \(host) is not a numeric IP address"
        }
    }
}
