import JSON
import Access
import ArgumentParser
import Server
import Speech
import Session
import CLinux
import TLS
import Loop
import Models
import Telemetry
import Tracing
import Metrics
import Telephony
import WebRTC
import Upstream
import Store
#if canImport(Glibc)
import Glibc
import SpeechContracts
#endif

struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the server.",
        discussion: "Every option can also be set with the environment variable named after it, e.g. PARLEY_PORT, PARLEY_MAX_CONNECTIONS.")

    @OptionGroup(title: "Language model")
    var languageModel: LanguageModelOptions

    @OptionGroup(title: "Speech")
    var speech: SpeechOptions

    @OptionGroup(title: "Server")
    var server: ServerOptions

    @OptionGroup(title: "Logging")
    var logging: LogOptions

    @OptionGroup(title: "Access")
    var access: AccessOptions

    @OptionGroup(title: "Telephony")
    var telephony: TelephonyOptions
    @OptionGroup(title: "WebRTC")
    var webrtc: WebRTCOptions

    @OptionGroup(title: "SIP")
    var sip: SIPOptions

    @OptionGroup(title: "Tools")
    var tools: ToolOptions

    @OptionGroup(title: "Resume")
    var resume: ResumeOptions

    @OptionGroup(title: "Recording")
    var recording: RecordingOptions

    enum Settings {
        static let upstreamCA = Setting.text("--upstream-ca", "PARLEY_UPSTREAM_CA", valueName: "file",
                                             about: "PEM CA certificates trusted for https LLM upstreams, besides the system store")
        static let workers = Setting.whole("--workers", "PARLEY_WORKERS", default: 1, in: 1...64,
                                           about: "Worker processes sharing the port (SO_REUSEPORT), each with --loops loops and its own descriptor limit; a supervisor restarts any that dies and /metrics sums them all")
    }

    @Option(Settings.upstreamCA) var upstreamCA: String?
    @Option(Settings.workers) var workers: String?

    @Option(name: .customLong("worker-dir"), help: .hidden)
    var workerDir: String?

    @Option(name: .customLong("worker-name"), help: .hidden)
    var workerName: String?

    /// A worker's speech helper: the supervisor's, one per box, at this socket.
    @Option(name: .customLong("speech-helper-socket"), help: .hidden)
    var speechHelperSocket: String?

    /// Starts only the speech helper, as serve would start its own, says its socket on one line
    /// ("parley speech helper at PATH"), and keeps it up (watched, restarted) until SIGTERM or
    /// SIGINT: the Swift test suites start one and give it to every server they start
    /// (`--speech-helper-socket`), so the models load once a run rather than once a server.
    @Flag(name: .customLong("speech-helper-only"), help: .hidden)
    var speechHelperOnly = false

    /// The loop's time a test moves (`TestClockControl`), at this socket: one loop, never for users.
    @Option(name: .customLong("test-clock"), help: .hidden)
    var testClock: String?

    /// A worker started by a supervisor stays quiet: the supervisor says when all of them listen.
    private var isWorker: Bool { workerName != nil }

    func run() throws {
        var settings = try readSettings()
        if speechHelperOnly { return try runSpeechHelperOnly(settings) }
        if settings.workers > 1 && !isWorker { return try supervise(settings) }
        if let testClock {
            let clock = ManualClock()
            settings.server.loops = 1
            settings.server.clock = .manual(clock)
            try TestClockControl.start(path: testClock, clock: clock)
        }
        if let workerDir, let workerName { settings.server.workerGroup = try joinSupervisor(directory: workerDir, name: workerName) }
        (settings.access.shared, settings.access.shares) = try sharedTenantCount(settings)
        let resume = try ResumeOptions.open(settings.resume)
        // A worker's helper is its supervisor's, which has said what it lacks.
        let models = settings.speech.helperModels(quiet: speechHelperSocket != nil)
        let helper = speechHelperSocket == nil ? settings.speech.startHelper(models) : nil
        defer { helper?.stop() }
        // A helper at a socket given is used for the models this server would have had its own
        // helper load, and only then: a server whose speech needs none has no helper.
        let status = helper?.status ?? (models.any ? speechHelperSocket.map(SpeechHelperStatus.init(sharedAt:)) : nil)
        // A helper another process runs, for a server that is no supervisor's worker (the one the
        // test suites share): counted up, as `SpeechHelperStatus(sharedAt:)` takes it. A worker's
        // is its supervisor's to count.
        if helper == nil, status != nil, !isWorker { SpeechMetrics.shared.helperUp.add(1) }
        let sessions = try buildSessions(settings, resume: resume, helper: status, models: models)
        let sipCalls = try settings.sip.map { given in
            do { return try SIPEndpoint(sessions: sessions, settings: given) } catch { throw StartupError("SIP: \(error)") }
        }
        let routes = installRoutes(settings, sessions: sessions, helper: status, sip: sipCalls)
        let (server, metricsServer) = try listen(settings, routes: routes, store: resume.store, sip: sipCalls)
        // Said once every loop runs, and so has opened what it listens on beyond the HTTP port
        // (SIP's ports are each loop's): a client that dials on this line is not refused.
        try serveUntilDrained(server, metricsServer) {
            if !isWorker { announce(settings, port: server.port, metricsServer: metricsServer) }
        }
    }

    // MARK: Steps

    private func runSpeechHelperOnly(_ settings: ServeSettings) throws {
        let signals = Sys.blockSignals([SIGINT, SIGTERM])
        guard let helper = settings.speech.startHelper(settings.speech.helperModels()) else {
            printError("the speech helper did not start (see the lines above)")
            throw ExitCode.failure
        }
        guard helper.status.readyGeneration != nil else {
            helper.stop()
            printError("the speech helper is not ready (see the lines above)")
            throw ExitCode.failure
        }
        print("parley speech helper at \(helper.status.socketPath)")
        fflush(nil)
        _ = Sys.waitForSignal(signals)
        helper.stop()
    }

    /// Every option, judged: a bad one ends the start here with one line (`SettingError`).
    private func readSettings() throws -> ServeSettings {
        try logging.bootstrap()
        var config = try server.configuration()
        let access = try self.access.access()
        if let refusal = self.access.refusal(host: config.host, access: access) {
            printError(refusal)
            throw ExitCode.failure
        }
        config.allowedOrigins = try self.access.allowedOrigins()
        let metricsListen = try self.access.metricsListen()
        if metricsListen != nil { config.servesMetrics = false }
        let caFile = try Settings.upstreamCA.read(upstreamCA)
        // Only a CA file is loaded now, so that a bad one ends the start; the system store alone
        // waits for the first https upstream (making a context initialises OpenSSL).
        var upstreamTLS: TLSContext?
        if let caFile {
            do {
                upstreamTLS = try TLSContext.client(caFile: caFile)
            } catch {
                throw Settings.upstreamCA.refuse(caFile, "cannot be used: \(error)")
            }
        }
        var twilio = try telephony.settings()
        twilio.requiresAuth = access.required
        return ServeSettings(server: config, workers: try Settings.workers.read(workers), access: access, limits: try self.access.limits(),
                             metricsListen: metricsListen, upstreamTLS: upstreamTLS, model: try languageModel.choice(), speech: try speech.choice(),
                             resume: try resume.choice(), recording: try recording.choice(), twilio: twilio, webrtc: try webrtc.settings(),
                             tools: try tools.settings(host: config.host), sip: try sip.settings(certificate: config.tlsCertificateFile.flatMap { cert in config.tlsKeyFile.map { (cert, $0) } }))
    }

    /// Where tenants are counted beyond this process, and among how many processes each limit
    /// is shared when that count cannot answer: every process on the Redis of `--store redis://`,
    /// else the workers of this box through the supervisor's table, else this process alone.
    private func sharedTenantCount(_ settings: ServeSettings) throws -> ((any SharedTenantCount)?, Int) {
        let workers = isWorker ? settings.workers : 1
        if case .redis(let host, let port) = settings.resume.store {
            let ledger = settings.access.ledger
            return (RedisTenantCount(host: host, port: port) { ledger.openByTenant() }, workers)
        }
        guard let workerDir, let workerName, let index = Supervisor.workerIndex(workerName) else { return (nil, 1) }
        do {
            return (try WorkerTenantTable.open(Supervisor.tenantTablePath(workerDir), workers: workers, worker: index), workers)
        } catch {
            throw StartupError("\(workerName): cannot open the workers' tenant table: \(error)")
        }
    }

    /// Sessions' traces, when the OpenTelemetry variables name a collector (docs/operations.md,
    /// "Traces"): the tracer, bootstrapped as the process's, and its exporter's loop started. A
    /// variable it cannot use stops the start, saying which (never its value: the headers
    /// variable holds a collector's key).
    private func startTracing() throws -> ParleyTracer? {
        let settings: TraceSettings
        switch TraceSettings.read({ Environment.string($0) }) {
        case .success(nil): return nil
        case .success(let read?): settings = read
        case .failure(let refusal): throw StartupError("tracing: \(refusal)")
        }
        do {
            let exporter = try SpanExporter(settings: settings, registry: MetricsRegistry())
            try exporter.start()
            let tracer = ParleyTracer(settings: settings, exporter: exporter)
            InstrumentationSystem.bootstrap(tracer)
            return tracer
        } catch {
            throw StartupError("tracing: \(error)")
        }
    }

    /// A worker goes when its supervisor goes, however the supervisor ended.
    private func joinSupervisor(directory: String, name: String) throws -> WorkerGroupMembership {
        guard let parent = Environment.string("PARLEY_SUPERVISOR_PID").flatMap(Int32.init),
              parley_die_with_parent(SIGTERM, parent) == 0 else {
            throw StartupError("\(name): no supervisor; a worker is started by parley serve --workers N")
        }
        return WorkerGroupMembership(directory: directory, name: name)
    }

    /// The providers (the language model and its fallback, the recogniser and the voice) behind
    /// the sessions' endpoint.
    private func buildSessions(_ settings: ServeSettings, resume: ResumeSettings, helper: SpeechHelperStatus?,
                               models: SpeechOptions.Choice.HelperModels) throws -> RealtimeEndpoint {
        let model = ResilientModel(primary: settings.model.primary.build(), fallback: settings.model.fallback?.build(), policy: settings.model.policy)
        let tracer = try startTracing()
        let recordings = try RecordingOptions.open(settings.recording)
        // Keys come from a file or the environment, never from flags, where they would show in
        // the process list.
        return RealtimeEndpoint(model: model, modelName: settings.model.primary.model, access: settings.access,
                                speech: try settings.speech.makeServices(helper: helper, models: models), limits: settings.limits, resume: resume,
                                echoGuardByDefault: settings.speech.echoGuard, echoCanceller: settings.speech.echoCanceller,
                                denoisesNoisyPhoneLines: settings.speech.phoneLineDenoise,
                                speculativeRepliesByDefault: settings.speech.speculativeReplies, readsTurnWords: settings.speech.turnWords,
                                turnTuning: settings.speech.turnTuning, tracer: tracer,
                                recordings: recordings, tooling: settings.tools.0, mcpClient: settings.tools.1)
    }

    private func installRoutes(_ settings: ServeSettings, sessions: RealtimeEndpoint, helper: SpeechHelperStatus?, sip: SIPEndpoint?) -> Router.Builder {
        var routes = Router.Builder()
        if let helper {
            // The box's speech work at its capacity, as the helper says to every worker: this
            // node takes no new sessions from balancers until it falls below (sessions held go on).
            routes.notReady { helper.isBusy ? "speech_busy" : nil }
            let registry = MetricsRegistry()
            _ = ComputedFamily(name: "parley_speech_busy", help: "1 while the box's speech work (decodes, verdicts, syntheses at the speech helper) is at --speech-capacity: /readyz answers 503 speech_busy and partials are not made.",
                               kind: .gauge, registry: registry) { helper.isBusy ? 1 : 0 }
            routes.addMetrics(registry)
        }
        ClientPage.install(on: &routes)
        routes.webSocket("/echo", name: "echo") { _, _ in EchoHandler.shared }
        sessions.install(on: &routes)
        TwilioEndpoint(sessions: sessions, settings: settings.twilio).install(on: &routes)
        // Calls out go through SIP's trunks: a JSON body on /v1/realtime/calls places one.
        var dialOut: (@Sendable (HTTPRequest, HTTPResponseStream) -> Void)?
        if let sip { dialOut = { request, stream in sip.dialOut(request, stream) } }
        WebRTCEndpoint(sessions: sessions, settings: settings.webrtc, dialOut: dialOut).install(on: &routes)
        if settings.sip != nil { SIPEndpoint.installMetrics(on: &routes) }
        return routes
    }

    /// The server, listening, its loops set up to carry the upstream client and the store (they
    /// start in `serveUntilDrained`), and /metrics on a listener of its own when asked.
    private func listen(_ settings: ServeSettings, routes: Router.Builder, store: (any ConversationStore)?, sip: SIPEndpoint?) throws -> (Server, Server?) {
        var config = settings.server
        // SIP's port is taken by each loop as it starts; one held by another program stops the
        // start here, with a line that says so.
        if let sip { try sip.checkPort() }
        let upstreamTLS = settings.upstreamTLS
        // The store is opened on each loop as it starts, not at its first session: until a remote
        // store's first connect has failed it counts as available, so with Redis down that session
        // would be given a token no other node could use, and never told resume_unavailable.
        config.loopStarted = { loop in
            HTTPClient.install(on: loop, tls: upstreamTLS)
            store?.prepare(on: loop)
        }
        // SIP over TCP and TLS is served on the server's own connections, from each loop's start.
        config.streamPorts = { loop in sip?.startLogging(on: loop) ?? [] }
        let server: Server
        do {
            server = try Server(configuration: config, routes: routes)
        } catch let error as TLSError {
            throw StartupError("TLS: \(error)")
        } catch {
            throw StartupError("cannot listen on \(config.host):\(config.port): \(error)")
        }
        return (server, try settings.metricsListen.map { try startMetricsListener(host: $0.host, port: $0.port, serving: server) })
    }

    /// /metrics on an address of its own, one loop, kept off a public port: the main server's
    /// exposition (summed over the workers with --workers).
    private func startMetricsListener(host: String, port: Int, serving server: Server) throws -> Server {
        var config = ServerConfiguration()
        config.host = host
        config.port = port
        config.loops = 1
        config.servesMetrics = false
        var routes = Router.Builder()
        let exposition = server.metricsExposition
        routes.get("/metrics") { _ in exposition() }
        do {
            let metricsServer = try Server(configuration: config, routes: routes)
            try metricsServer.start()
            return metricsServer
        } catch {
            throw StartupError("cannot listen for metrics on \(host):\(port): \(error)")
        }
    }

    private func announce(_ settings: ServeSettings, port: Int, metricsServer: Server?) {
        let metricsWhere = metricsServer.map { " (metrics on \($0.configuration.host):\($0.port))" } ?? ", /metrics"
        print("parley listening on \(settings.scheme)://\(settings.shownHost):\(port)/  (\(settings.server.loops) loops; sessions on /v1/realtime and /ws with the \(settings.modelSummary); \(settings.speech.summary); calls on \(settings.twilio.path), /v1/realtime/calls (WebRTC)\(settings.sipSummary); /echo, /healthz\(metricsWhere))")
        fflush(nil)  // flush every stream: make run and tests read this line through a pipe
    }

    /// Starts the loops and serves until SIGTERM or SIGINT, then drains (docs/operations.md).
    private func serveUntilDrained(_ server: Server, _ metricsServer: Server?, started: () -> Void) throws {
        try server.runUntilTerminated(started: started, reloaded: Self.reportReload)
        metricsServer?.shutdown()
        metricsServer?.wait()
        if !isWorker { print("parley stopped") }
    }

    /// The supervisor of `--workers N`: the workers get these same arguments, with the port made
    /// concrete (so that port 0 means one free port for all of them).
    private func supervise(_ settings: ServeSettings) throws {
        // The workers share one signing key, so that a client secret minted by one opens a session
        // on any: without one given, the supervisor makes one and hands it down in the environment.
        if access.signingKeyFile == nil && Environment.string("PARLEY_SIGNING_KEY") == nil {
            setenv("PARLEY_SIGNING_KEY", Base64.encode(OpenSSL.randomBytes(48)), 1)
        }
        // One speech helper for the box (about 320 MiB of models): the workers' loops connect to it.
        let helper = settings.speech.startHelper(settings.speech.helperModels())
        defer { helper?.stop() }
        let helperArguments = helper.map { ["--speech-helper-socket", $0.status.socketPath] } ?? []
        let shared: Int
        let supervisor: Supervisor
        do {
            shared = try Supervisor.concretePort(host: settings.server.host, port: settings.server.port)
            supervisor = try Supervisor(count: settings.workers, arguments: Self.workerArguments(port: shared) + helperArguments,
                                        shutdownTimeout: settings.server.shutdownTimeout, figures: helper == nil ? [] : [SpeechMetrics.shared.registry])
        } catch {
            throw StartupError("cannot start the workers: \(error)")
        }
        do {
            try supervisor.run {
                print("parley listening on \(settings.scheme)://\(settings.shownHost):\(shared)/  (\(settings.workers) workers × \(settings.server.loops) loops; sessions on /v1/realtime and /ws with the \(settings.modelSummary); \(settings.speech.summary); calls on \(settings.twilio.path), /v1/realtime/calls (WebRTC)\(settings.sipSummary); /echo, /healthz, /metrics summed over the workers)")
                fflush(nil)
            }
        } catch {
            throw StartupError("\(error)")
        }
        print("parley stopped")
    }

    /// This process's arguments for a worker: without the subcommand name, --workers and --port.
    static func workerArguments(port: Int) -> [String] {
        var arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "serve" { arguments.removeFirst() }
        var kept: [String] = []
        var skipNext = false
        for argument in arguments {
            if skipNext { skipNext = false; continue }
            if argument == "--workers" || argument == "--port" { skipNext = true; continue }
            if argument.hasPrefix("--workers=") || argument.hasPrefix("--port=") { continue }
            kept.append(argument)
        }
        return kept + ["--port", String(port)]
    }

    static func reportReload(_ outcome: Result<Void, TLSError>) {
        switch outcome {
        case .success: print("parley: SIGHUP: TLS certificate reloaded")
        case .failure(let error): printError("parley: SIGHUP: TLS certificate not reloaded, the old one stays in service: \(error)")
        }
        fflush(nil)
    }
}
