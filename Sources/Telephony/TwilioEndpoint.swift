import Session
import Metrics
import Server
import SessionEngine

/// Phone calls through Twilio Media Streams (`<Connect><Stream url="wss://…/twilio">`): one
/// session per call on the same engine as `/v1/realtime`, with the caller's µ-law audio in and the
/// reply's out, marks to know what the caller heard, and `clear` on barge-in.
public struct TwilioEndpoint: Sendable {
    /// Server-wide defaults for calls; a call's `customParameters` (TwiML `<Parameter>`s named
    /// `instructions`, `voice`, `greeting`, `vad_threshold`, `vad_silence_ms`) override them.
    public struct Settings: Sendable {
        public var path = "/twilio"
        public var instructions = ""
        public var voice = "alloy"
        /// Spoken when the call starts; empty for none.
        public var greeting = ""
        /// When set, the upgrade must carry Twilio's signature made with this auth token.
        public var authToken: [UInt8]?
        /// The scheme and host Twilio was given, when a proxy in front changes them.
        public var publicURL: String?
        /// The server requires credentials for sessions: then calls without an auth token to check
        /// them by are refused too, or `/twilio` would be the one open door to the model.
        public var requiresAuth = false
        /// Settings every call starts with, as a `session.update` would give them (its tools, MCP
        /// servers among them): `--twilio-session`. A call's parameters override its instructions
        /// and voice; its audio stays µ-law.
        public var session: SessionUpdate?

        public init() {}
    }

    let sessions: RealtimeEndpoint
    let settings: Settings
    private let signature: TwilioSignature?

    public init(sessions: RealtimeEndpoint, settings: Settings) {
        self.sessions = sessions
        self.settings = settings
        signature = settings.authToken.map { TwilioSignature(authToken: $0, publicBase: settings.publicURL) }
    }

    public func install(on routes: inout Router.Builder) {
        routes.addMetrics(TwilioMetrics.shared.registry)
        routes.webSocket(settings.path, name: "twilio") { request, _ in admit(request) }
    }

    /// A stream Twilio did not sign is refused before the upgrade (403), as Twilio's security
    /// guide asks; a signed one (or any, without a token) opens a call.
    func admit(_ request: HTTPRequest) -> Result<WebSocketAdmission, HTTPRefusal> {
        if signature == nil && settings.requiresAuth {
            TwilioMetrics.shared.refused.add(1)
            return .failure(HTTPRefusal(.jsonError(.forbidden, code: "calls_not_configured",
                                                   message: "this server requires credentials, and calls are checked with Twilio's signature: give it your Twilio auth token (TWILIO_AUTH_TOKEN or --twilio-auth-token-file)")))
        }
        if let signature, !signature.accepts(request.header("x-twilio-signature"), url: signature.url(of: request)) {
            TwilioMetrics.shared.refused.add(1)
            return .failure(HTTPRefusal(.jsonError(.forbidden, code: "invalid_signature",
                                                   message: "the X-Twilio-Signature header is missing or does not match this URL")))
        }
        return .success(WebSocketAdmission(subprotocol: nil, handler: TwilioCallHandler(endpoint: self)))
    }
}

/// How a Twilio call ended: a `stop` received, or the socket closed without one.
enum TwilioCallEnd: String, CaseIterable, MetricLabel {
    static let labelName = "end"
    case stop
    case noStop = "no_stop"
}

/// The calls' series in /metrics.
final class TwilioMetrics: Sendable {
    static let shared = TwilioMetrics(registry: .process)

    /// Where its series are declared.
    let registry: MetricsRegistry

    let callsOpen: MetricFamily
    let calls: LabelledFamily<TwilioCallEnd>
    let marksOutstanding: MetricFamily
    let clears: MetricFamily
    let dtmf: MetricFamily
    let rejected: LabelledFamily<TwilioRejection>
    let refused: MetricFamily

    init(registry: MetricsRegistry = MetricsRegistry()) {
        self.registry = registry
        callsOpen = MetricFamily(name: "parley_twilio_calls_open", help: "Twilio calls in progress (a start received, the stream not ended).", kind: .gauge, registry: registry)
        calls = LabelledFamily(name: "parley_twilio_calls_total", help: "Twilio calls ended, by how: stop received, or the socket closed without one.",
                               registry: registry)
        marksOutstanding = MetricFamily(name: "parley_twilio_marks_outstanding", help: "Marks sent and not yet echoed: reply audio queued at Twilio, in 20 ms chunks.", kind: .gauge, registry: registry)
        clears = MetricFamily(name: "parley_twilio_clears_total", help: "clear messages sent (barge-in: the caller spoke over a reply).", registry: registry)
        dtmf = MetricFamily(name: "parley_twilio_dtmf_digits_total", help: "Keypresses received.", registry: registry)
        rejected = LabelledFamily(name: "parley_twilio_messages_rejected_total", help: "Messages from Twilio ignored, by why.", registry: registry)
        refused = MetricFamily(name: "parley_twilio_signature_refusals_total", help: "Upgrades refused (403) for a missing or wrong X-Twilio-Signature.", registry: registry)
    }

    /// Its series alone, as a scrape shows them.
    func render() -> String { registry.render() }
}
