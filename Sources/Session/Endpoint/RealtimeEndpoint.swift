import Access
import Loop
import Metrics
import Models
import Server
import Telemetry
import MCP
import SpeechContracts
import SessionEngine

/// The two session endpoints and what they share: the model, and who may connect.
///
/// `/v1/realtime` speaks the OpenAI Realtime API as it is (JSON events, base64 pcm16 at 24 kHz);
/// `/ws` adds binary frames, each one Opus packet, and the `opus` audio format. Both choose the
/// API dialect per connection from the `OpenAI-Beta` header.
///
/// A class, all of whose fields are constants: every session refers to it, and as a struct it was
/// copied into each one (456 bytes of an idle session's 3 KB).
public final class RealtimeEndpoint: Sendable {
    public let model: any LanguageModel
    /// The model name sessions report (session.created's `model`).
    public let modelName: String
    /// Who may connect (API keys, tokens, client secrets) and how many sessions each tenant may
    /// hold, checked before the upgrade. Without keys or tokens, anyone the listener admits.
    public let access: Access
    /// Recognition and synthesis, when configured.
    public let speech: SpeechServices
    /// What each session may spend.
    public let limits: SessionLimits
    /// How sessions that ask for it outlive their connection.
    public let resume: ResumeSettings
    /// Whether a session whose client has not said (`echo_guard`) discounts its replies' echo
    /// (`--echo-guard`); /twilio calls always do.
    public let echoGuardByDefault: Bool
    /// Whether the echo guard cancels (libspeexdsp) before it gates (`--echo-canceller`).
    public let echoCanceller: Bool
    /// Whether a phone call whose session chose no `noise_reduction` is denoised once its line is
    /// found noisy (`--phone-line-denoise`; `LineNoiseFloor`).
    public let denoisesNoisyPhoneLines: Bool
    /// Whether a `semantic_vad` session whose client has not said speculates (`--speculative-replies`).
    public let speculativeRepliesByDefault: Bool
    /// Whether `semantic_vad` weighs the words decoded as a turn goes quiet in its end, beside the
    /// audio model (`--turn-words`; see `TurnWords`).
    public let readsTurnWords: Bool
    /// The server's operating point for `semantic_vad` at `auto` (`--turn-complete-at`,
    /// `--turn-finished-wait-ms`).
    public let turnTuning: TurnEnding.Tuning
    /// Where each session's report goes when it ends, and is read back.
    public let reports: SessionReports
    /// GPT-Live sessions started with `store: true`, kept after they end for forks and their
    /// recording's download: in the store, or this process's memory; as long as recordings are.
    public let liveSessions: KeptDocuments
    /// Sessions' traces, when the OpenTelemetry variables name a collector.
    public let tracer: ParleyTracer?
    /// Where sessions that ask are recorded (`--recordings`); nil: none may be.
    public let recordings: Recordings?
    /// Which MCP servers sessions may name, the filler said while tools run (`--mcp-allow`,
    /// `--tool-filler`).
    public let tooling: ToolSettings
    /// Time-outs and limits of each session's MCP clients.
    public let mcpClient: MCPClient.Settings
    static let reportsPrefix = "/v1/sessions/"
    /// Without a store, the stored Live sessions this process keeps (the last ones; each is its
    /// configuration and at most 128 messages).
    static let memoryLiveSessions = 256

    public init(model: any LanguageModel, modelName: String, access: Access = Access(), speech: SpeechServices = SpeechServices(),
                limits: SessionLimits = SessionLimits(), resume: ResumeSettings = ResumeSettings(), echoGuardByDefault: Bool = false,
                echoCanceller: Bool = true, denoisesNoisyPhoneLines: Bool = true, speculativeRepliesByDefault: Bool = false, readsTurnWords: Bool = true,
                turnTuning: TurnEnding.Tuning = .init(), tracer: ParleyTracer? = nil, recordings: Recordings? = nil,
                tooling: ToolSettings = .standard, mcpClient: MCPClient.Settings = .init()) {
        self.tooling = tooling
        self.mcpClient = mcpClient
        self.readsTurnWords = readsTurnWords
        self.turnTuning = turnTuning
        self.tracer = tracer
        self.recordings = recordings
        self.speculativeRepliesByDefault = speculativeRepliesByDefault
        reports = SessionReports(store: resume.store, keepSeconds: resume.reportSeconds)
        liveSessions = KeptDocuments(.liveSession, store: resume.store, keepSeconds: Int(recordings?.keepSeconds ?? Recordings.defaultRetentionDays * 86_400),
                                     memoryLimit: Self.memoryLiveSessions)
        self.echoGuardByDefault = echoGuardByDefault
        self.echoCanceller = echoCanceller
        self.denoisesNoisyPhoneLines = denoisesNoisyPhoneLines
        self.limits = limits
        self.resume = resume
        self.model = model
        self.modelName = modelName
        self.access = access
        self.speech = speech
    }

    public func install(on routes: inout Router.Builder) {
        // The process's session, speech and upstream series (declared now, before the first
        // scrape), the tenants', the store's, and this endpoint's speech workers'.
        for registry in [SessionMetrics.shared.registry, SpeechMetrics.shared.registry, UpstreamMetrics.shared.registry, ToolMetrics.shared.registry,
                         access.ledger.registry] {
            routes.addMetrics(registry)
        }
        CallControlRoute.install(on: &routes, access: access)
        if let store = resume.store { routes.addMetrics(store.metricsRegistry) }
        if let tracer { routes.addMetrics(tracer.exporter.registry) }
        if let recordings { routes.addMetrics(recordings.registry) }
        if let pool = speech.pool {
            let workers = MetricsRegistry()
            SpeechMetrics.declare(pool: pool, in: workers)
            routes.addMetrics(workers)
        }
        routes.webSocket("/v1/realtime", name: "realtime") { request, offered in self.admit(request, offered, allowsOpus: false) }
        routes.webSocket("/ws", name: "ws") { request, offered in self.admit(request, offered, allowsOpus: true) }
        // Azure OpenAI's path (`?api-version=…&deployment=…`, the key in `api-key`): the same
        // sessions, so Azure-style clients need no change but the host.
        routes.webSocket("/openai/realtime", name: "azure") { request, offered in self.admit(request, offered, allowsOpus: false) }
        // OpenAI's second voice API, GPT-Live, on the same engine (docs/protocol.md, "GPT-Live").
        LiveRoutes.install(on: &routes, endpoint: self)
        routes.streamUnder(Self.reportsPrefix) { request, stream in self.reports.serve(request, stream, access: self.access) }
        routes.post("/v1/realtime/client_secrets") { request in self.createClientSecret(request, dialect: .ga) }
        routes.post("/v1/realtime/sessions") { request in self.createClientSecret(request, dialect: .beta) }
    }

    /// Browsers cannot set headers, so they offer `realtime` plus `openai-insecure-api-key.<key>`;
    /// the answer names `realtime` (a key must never be echoed back in a response header).
    func admit(_ request: HTTPRequest, _ offered: [String], allowsOpus: Bool) -> Result<WebSocketAdmission, HTTPRefusal> {
        if let callID = request.queryValue("call_id") { return admitSideband(request, offered, callID: String(callID)) }
        let asked: ResumeRequest
        switch ResumeRequest.parse(request) {
        case .success(let parsed): asked = parsed
        case .failure(let refusal): return .failure(refusal)
        }
        var resuming: String?
        if case .resume(let token, _) = asked { resuming = ResumeToken.hash(token) }
        // A resume of a session parked in this process: it holds its place in the tenant's count.
        let held: (String) -> Bool = { tenant in resuming.map { ResumeRegistry.shared.isParked(tokenHash: $0, tenant: tenant) } ?? false }
        // No seat of speech capacity is taken here: a session that never speaks costs the speech
        // helper nothing, and the box's speech work is counted where it is queued (the helper),
        // which says when it is busy (/readyz) rather than refusing sessions.
        return access.admit(request, offered: offered, resuming: resuming != nil, held: held).map { admitted in
            let handler: any WebSocketHandler
            var session: String?
            switch asked {
            case .resume(let token, let lastSeq):
                handler = ResumingHandler(endpoint: self, request: request, admitted: admitted, allowsOpus: allowsOpus, token: token, lastSeq: lastSeq)
            case .resumable, .none:
                let made = RealtimeSessionHandler(endpoint: self, request: request, admitted: admitted, allowsOpus: allowsOpus, resumable: asked == .resumable)
                if asked == .resumable { session = made.driver.engine.sessionID }
                handler = made
            }
            // With a shared count, the 101 waits for the tenant's place across processes.
            let confirm: WebSocketAdmission.Confirm? = admitted.needsConfirmation ? { [session, resuming] loop, done in
                admitted.confirm(session: session, resuming: resuming, on: loop, done)
            } : nil
            return WebSocketAdmission(subprotocol: offered.contains("realtime") ? "realtime" : nil, handler: handler, confirm: confirm)
        }
    }

    /// `?call_id=`: a sideband on a WebRTC call's session, for whoever may open sessions here
    /// (the same key, token or secret); it is the call's session, so it takes no place of its own.
    private func admitSideband(_ request: HTTPRequest, _ offered: [String], callID: String) -> Result<WebSocketAdmission, HTTPRefusal> {
        access.identify(request, offered: offered).flatMap { _ in
            guard let entry = CallDirectory.shared.find(callID) else {
                return .failure(HTTPRefusal(.jsonError(.notFound, code: "call_not_found", message: "no call '\(callID)' on this server")))
            }
            return .success(WebSocketAdmission(subprotocol: offered.contains("realtime") ? "realtime" : nil, handler: SidebandHandler(entry)))
        }
    }
}
