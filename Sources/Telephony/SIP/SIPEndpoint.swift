import Access
import Loop
import Media
import Server
import Session
import SIP
import TLS
import SessionEngine

/// Phone calls over SIP, straight from a trunk or a PBX: each loop's share of the SIP port and its
/// user agent (`SIPUserAgent`), started with the loop; who may call (source addresses, trunks'
/// digest credentials); how a call is answered (at once with the server's call settings, or as
/// the webhook's application says through call control); and the calls in `CallDirectory`, where
/// call control and sideband WebSockets find them.
public final class SIPEndpoint: Sendable {
    public struct Settings: Sendable {
        /// The port SIP listens on, UDP and TCP (`--sip-port`, 5060 by convention); every loop binds it.
        public var port = 5060
        /// SIP over TLS (RFC 3261 section 26.2.1) on this port, with the server's certificate
        /// (`--tls-cert`, `--tls-key`), when one is configured (`--sip-tls-port`).
        public var tls: (port: Int, certificateFile: String, keyFile: String)?
        /// Where SIP and RTP bind (`--sip-host`).
        public var host = "0.0.0.0"
        /// The address Contact, Via and the SDP answers name (`--sip-public-ip`): the one callers
        /// reach, when the server is behind NAT. Nil: the bound address, or 127.0.0.1 when it binds all.
        public var publicAddress: String?
        /// Each call's RTP port is taken from this range (`--sip-rtp-ports`); nil: the kernel's choice.
        public var rtpPorts: ClosedRange<Int>?
        /// Source addresses INVITEs may come from (`--sip-allow`); others get 403.
        public var allowedSources: [AddressRange] = [AddressRange("127.0.0.0/8")!, AddressRange("::1/128")!]
        /// Trunks' usernames and passwords (`--sip-trunks`): INVITEs must answer a digest challenge
        /// with one of them. Nil or empty: no authentication beyond the source addresses.
        public var trunks: [String: String]?
        /// The realm of the digest challenge.
        public var realm = "parley"
        /// What every call's session starts with (`--sip-session`), as a `session.update` gives it.
        public var session: SessionUpdate?
        /// Said when a call is answered (`--sip-greeting`).
        public var greeting: String?
        /// Settings by number dialled (the Request-URI's user) or by trunk (its digest username),
        /// over `session` and `greeting` (`--sip-routes`).
        public var routes = SIPRoutes()
        /// Where each incoming call's `realtime.call.incoming` goes, signed with its secret
        /// (`--sip-webhook`, `--sip-webhook-secret-file`): the application then accepts or rejects
        /// it through call control. Nil: calls are answered at once with `session`.
        public var webhook: (url: String, secret: String)?
        /// Which API the webhook announces calls for (`--sip-webhook-api`): the Realtime API's
        /// `realtime.call.incoming` (accepted with `/v1/realtime/calls/{call_id}/accept`), or
        /// GPT-Live's `live.transport.incoming` (`/v1/live/sessions/{session_id}/accept`).
        public var webhookAPI = SIPWebhook.API.realtime
        /// A call with no RTP for this long (not on hold) is ended with a BYE.
        public var mediaTimeoutSeconds = 30.0
        /// INVITEs begun per second and calls held, per loop (`--sip-max-invites`, `--sip-max-calls`):
        /// past them, 503 with Retry-After.
        public var maxInvitesPerSecond = 200
        public var maxCallsPerLoop = 5_000
        /// The trunks calls go out through, by name (`--sip-trunk`).
        public var outboundTrunks: [String: SIPOutboundTrunk] = [:]
        /// SRTP (SDES, RFC 4568) on calls signalled over TLS (`--sip-srtp`): taken when offered
        /// (`optional`), or demanded of every call, in and out (`required`).
        public var srtp = SRTPPolicy.optional

        public enum SRTPPolicy: String, Sendable, CaseIterable {
            case optional, required
        }

        public init() {}

        var advertised: String {
            if let publicAddress { return publicAddress }
            return host == "0.0.0.0" || host == "::" ? "127.0.0.1" : host
        }

        /// Parley's Contact in a dialog over `transport` ("UDP", "TCP" or "TLS"), and the Via of
        /// its requests there.
        func contact(over transport: String, user: String = "parley") -> String {
            switch transport {
            case "TLS": "<sip:\(user)@\(advertised):\(tls?.port ?? port);transport=tls>"
            case "TCP": "<sip:\(user)@\(advertised):\(port);transport=tcp>"
            default: "<sip:\(user)@\(advertised):\(port)>"
            }
        }

        func via(over transport: String, branch: String) -> String {
            "SIP/2.0/\(transport) \(advertised):\(transport == "TLS" ? tls?.port ?? port : port);branch=\(branch);rport"
        }

        var rtpBind: SocketAddress {
            (try? Sys.resolve(host: host, port: 0, passive: true, numericOnly: true))?.first ?? .ipv4(0, 0, 0, 0, port: 0)
        }

        func allows(_ peer: TransportAddress) -> Bool { allowedSources.contains { $0.contains(peer) } }
    }

    let settings: Settings
    let sessions: RealtimeEndpoint
    /// Trunks' digest challenges and their answers checked (`SIPInviteAdmission`).
    let authenticator: SIPDigestAuthenticator
    let webhook: SIPWebhook?

    /// The TLS port's context, made from the certificate at start.
    let tlsContext: TLSContext?
    /// The trunks' limits on calls out, across loops.
    let trunkLimits: SIPTrunkLimits
    /// Each TLS trunk's client context (its `ca_file` beside the system's trust store).
    let trunkTLS: [String: TLSContext]

    public enum Invalid: Error, CustomStringConvertible {
        case webhook
        case tls(String)
        public var description: String {
            switch self {
            case .webhook: "the SIP webhook's URL is not http(s), or its secret is not whsec_ and base64"
            case .tls(let why): "SIP over TLS: \(why)"
            }
        }
    }

    public init(sessions: RealtimeEndpoint, settings: Settings) throws(Invalid) {
        self.sessions = sessions
        self.settings = settings
        authenticator = SIPDigestAuthenticator(realm: settings.realm, key: OpenSSL.randomBytes(32))
        trunkLimits = SIPTrunkLimits(settings.outboundTrunks)
        var clients: [String: TLSContext] = [:]
        for trunk in settings.outboundTrunks.values where trunk.transport == .tls {
            // The trunk sends its requests in the call to Parley's Contact, its TLS port.
            guard settings.tls != nil else { throw .tls("trunk '\(trunk.name)' calls out over TLS: Parley needs a TLS port of its own (--tls-cert, --tls-key)") }
            do throws(TLSError) { clients[trunk.name] = try TLSContext.client(caFile: trunk.caFile) } catch {
                throw .tls("trunk '\(trunk.name)': \(error)")
            }
        }
        trunkTLS = clients
        if let tls = settings.tls {
            do throws(TLSError) { tlsContext = try TLSContext.server(certificateFile: tls.certificateFile, keyFile: tls.keyFile) } catch {
                throw .tls("\(error)")
            }
        } else {
            tlsContext = nil
        }
        if let given = settings.webhook {
            guard var made = SIPWebhook(url: given.url, secret: given.secret) else { throw .webhook }
            made.api = settings.webhookAPI
            webhook = made
        } else {
            webhook = nil
        }
    }

    private var address: SocketAddress? {
        (try? Sys.resolve(host: settings.host, port: settings.port, passive: true, numericOnly: true))?.first
    }

    /// Whether the loops will be able to bind the SIP port: one held by another program (without
    /// SO_REUSEPORT, as a PBX holds it) is refused here, before any loop starts.
    public func checkPort() throws(SystemError) {
        guard let address else { throw SystemError("--sip-host \(settings.host) is not a numeric IP address") }
        let fd = try Sys.datagramSocket(family: address.family)
        defer { Sys.close(fd) }
        try Sys.bindDatagram(fd, to: address, shared: true)
        let stream = try Sys.streamSocket(family: address.family)
        defer { Sys.close(stream) }
        try Sys.listen(stream, on: address)
        if let tls = settings.tls {
            let secure = try Sys.streamSocket(family: address.family)
            defer { Sys.close(secure) }
            try Sys.listen(secure, on: address.withPort(UInt16(tls.port)))
        }
    }

    /// Starts `loop`'s share of the SIP port (called as each loop starts): its UDP socket, and the
    /// TCP (and TLS) ports the server's loop serves on its own connections (`StreamPort`).
    public func start(on loop: EventLoop) throws(SystemError) -> [StreamPort] {
        guard let address else { throw SystemError("--sip-host \(settings.host) is not a numeric IP address") }
        let agent = SIPUserAgent(loop: loop, endpoint: self, playout: .on(loop))
        _ = try SIPSignallingPort.open(on: loop, at: address, agent: agent)
        loop.local { AgentSlot() }.agent = agent
        // Registrations with trunks: one process's, from its first loop, once its ports are open.
        if loop.handle.index == 0 {
            let registrar = SIPTrunkRegistrar(agent: agent, trunks: settings.outboundTrunks.values.sorted { $0.name < $1.name })
            if !registrar.isEmpty {
                agent.registrar = registrar
                _ = loop.schedule(after: 0) { registrar.start() }
            }
        }
        var tcp = SIPStreamProtocol.port(at: address, tls: nil, agent: agent)
        // Connections to trunks over TCP and TLS are opened from, and counted on, the TCP port.
        tcp.dialer = { [unowned agent] dialer in agent.trunks.attach(dialer) }
        var ports = [tcp]
        if let tlsContext, let tls = settings.tls {
            ports.append(SIPStreamProtocol.port(at: address.withPort(UInt16(tls.port)), tls: tlsContext, agent: agent))
        }
        return ports
    }

    /// `start`, a failure logged (the port was checked before the loops started).
    public func startLogging(on loop: EventLoop) -> [StreamPort] {
        do throws(SystemError) { return try start(on: loop) } catch {
            sessionLog.error("SIP port not opened on a loop", metadata: ["error": "\(error)"])
            return []
        }
    }

    public static func installMetrics(on routes: inout Router.Builder) {
        routes.addMetrics(SIPMetrics.shared.registry)
    }

    // MARK: Calls

    /// An INVITE was taken: answered now with the server's settings for calls, or, with a
    /// webhook, ringing until the application accepts or rejects it (or does neither in time).
    func offered(_ call: SIPCall) {
        call.line.list()
        call.route = settings.routes.route(for: call.invite)
        guard let webhook else { return call.accept(.realtime(nil)) }
        call.ring()
        webhook.post(callID: call.id, invite: call.invite, on: call.agent.loop) { [weak call] delivered in
            guard let call, !delivered else { return }
            sessionLog.warning("SIP webhook not delivered; call refused", metadata: ["call": "\(call.id)"])
            call.reject(status: 480)
        }
        _ = call.agent.loop.schedule(after: webhook.answerSeconds) { [weak call] in call?.reject(status: 480) }
    }

    /// Each loop's user agent, for the calls placed from requests on that loop.
    private final class AgentSlot {
        weak var agent: SIPUserAgent?
    }

    // MARK: Calls Parley places

    /// `POST /v1/realtime/calls` or `POST /v1/live/sessions` with a SIP transport
    /// (`SIPDialRequest`): the call is placed from the request's loop through the trunk named, and
    /// answered at once, while it rings, with its id: 201 with `Location` and `{"id"}` (Realtime),
    /// 200 with `{"session": {"id"}, "transport": {"type": "sip"}}` (Live). Its progress goes to the
    /// sidebands attached by that id.
    public func dialOut(_ request: HTTPRequest, _ stream: HTTPResponseStream) {
        func answer(_ response: HTTPResponse) { stream.respond(CallControlRoute.cors(response, request)) }
        if case .failure(let refusal) = sessions.access.identify(request, offered: []) { return answer(refusal.response) }
        let live = request.path == LiveRoutes.path
        let dial: SIPDialRequest
        do throws(ProtocolError) { dial = try SIPDialRequest.parse(request.body, live: live) } catch {
            return answer(.jsonError(.badRequest, code: error.code.rawValue, message: error.message))
        }
        guard let trunk = settings.outboundTrunks[dial.trunk] else {
            let known = settings.outboundTrunks.keys.sorted()
            return answer(.jsonError(.badRequest, code: "unknown_trunk",
                                     message: known.isEmpty ? "this server has no trunks to call out through (--sip-trunk NAME=URI)" : "no trunk '\(dial.trunk)': the trunks are \(known.joined(separator: ", "))"))
        }
        guard let agent = stream.loop.local({ AgentSlot() }).agent else {
            return answer(.jsonError(.serviceUnavailable, code: "sip_unavailable", message: "SIP is not running on this loop"))
        }
        guard let peer = agent.trunks.peer(for: trunk) else {
            return answer(.jsonError(.serviceUnavailable, code: "trunk_unreachable", message: "no \(trunk.transport.rawValue) connection to trunk '\(trunk.name)' could be begun"))
        }
        // A call out is a session of its tenant's from the start: it takes its place (and its
        // rate) as a WebSocket's does, held while it rings and talks.
        let admitted: Admitted
        switch sessions.access.admit(request, offered: []) {
        case .success(let made): admitted = made
        case .failure(let refusal): return answer(refusal.response)
        }
        func answerPlaced(_ call: SIPDialOut) {
            if live {
                return answer(HTTPResponse(status: .ok, contentType: "application/json", body: #"{"session":{"id":"\#(call.id)"},"transport":{"type":"sip"}}"# + "\n"))
            }
            answer(HTTPResponse(status: .created, headers: [("Content-Type", "application/json"), ("Location", "\(CallControlRoute.callsPath)/\(call.id)")],
                                body: Array(#"{"id":"\#(call.id)","object":"realtime.call"}"#.utf8) + [10]))
        }
        let place: SIPTrunkPlace
        do throws(SIPTrunkLimiter.Refusal) { place = try trunkLimits.admit(trunk.name, now: stream.loop.nanoseconds()) } catch {
            agent.metrics.dialRefused.add(1, error.label)
            return answer(Self.refusal(error, trunk: trunk.name))
        }
        let placeCall = {
            let call: SIPDialOut
            do { call = try SIPDialOut(agent: agent, trunk: trunk, request: dial, peer: peer, holding: (admitted, place)) } catch {
                return answer(.jsonError(.serviceUnavailable, code: "no_rtp_port", message: "no RTP port is free for the call"))
            }
            agent.trunks.dial(call)
            answerPlaced(call)
        }
        guard admitted.needsConfirmation else { return placeCall() }
        // A tenant counted across nodes: the shared count is asked first.
        admitted.confirm(session: nil, resuming: nil, on: stream.loop) { refusal in
            if let refusal { return answer(refusal.response) }
            placeCall()
        }
    }

    /// A trunk at its limit: 429 with when to try again (`trunk_busy`, `trunk_rate_limited`).
    static func refusal(_ refusal: SIPTrunkLimiter.Refusal, trunk: String) -> HTTPResponse {
        switch refusal {
        case .busy(let max):
            .jsonError(.tooManyRequests, code: refusal.label.rawValue, message: "trunk '\(trunk)' carries its most calls (\(max)); retry when one ends",
                       headers: [("Retry-After", "5")])
        case .rate(let perSecond, let retry):
            .jsonError(.tooManyRequests, code: refusal.label.rawValue, message: "trunk '\(trunk)' places at most \(perSecond) calls a second; retry in \(retry) s",
                       headers: [("Retry-After", "\(retry)")])
        }
    }
}

/// What a call to one number, or from one trunk, starts with: a session object (as
/// `session.update` sends it) and a greeting, over the server's `--sip-session` and `--sip-greeting`.
public struct SIPRoutes: Sendable {
    public struct Route: Sendable {
        public var session: SessionUpdate?
        public var greeting: String?
        public init(session: SessionUpdate?, greeting: String?) {
            self.session = session
            self.greeting = greeting
        }
    }

    /// By the number dialled: the Request-URI's user part, as the trunk sends it (`+15551234567`).
    public var numbers: [String: Route] = [:]
    /// By the trunk's digest username, for numbers without a route of their own.
    public var trunks: [String: Route] = [:]

    public init() {}

    func route(for invite: SIPMessage) -> Route? {
        if let user = invite.requestURI?.user, let route = numbers[user] { return route }
        if let header = invite.value("Authorization"), let credentials = SIPDigestCredentials(header), let route = trunks[credentials.username] {
            return route
        }
        return nil
    }
}

/// An address range in CIDR form (`10.0.0.0/8`, `2001:db8::/32`, or one address).
public struct AddressRange: Sendable, Equatable {
    let base: TransportAddress.IP
    let bits: Int

    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1)
        guard let first = parts.first, let address = (try? Sys.resolve(host: String(first), port: 0, passive: false, numericOnly: true))?.first,
              let parsed = TransportAddress(address) else { return nil }
        let width = parsed.isIPv6 ? 128 : 32
        let bits = parts.count == 2 ? Int(parts[1]) : width
        guard let bits, (0...width).contains(bits) else { return nil }
        base = parsed.ip
        self.bits = bits
    }

    func contains(_ address: TransportAddress) -> Bool {
        switch (base, address.ip) {
        case (.v4(let net), .v4(let ip)):
            guard bits > 0 else { return true }
            let mask = UInt32.max << (32 - bits)
            return net & mask == ip & mask
        case (.v6(let netHigh, let netLow), .v6(let high, let low)):
            if bits <= 64 {
                guard bits > 0 else { return true }
                let mask = UInt64.max << (64 - bits)
                return netHigh & mask == high & mask
            }
            let mask = bits == 128 ? UInt64.max : UInt64.max << (128 - bits)
            return netHigh == high && netLow & mask == low & mask
        default:
            return false
        }
    }
}
