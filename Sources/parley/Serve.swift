import JSON
import Access
import ArgumentParser
import Server
import Session
import CLinux
import TLS
import Loop
import Telephony
import Upstream
#if canImport(Glibc)
import Glibc
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

    @OptionGroup(title: "Resume")
    var resume: ResumeOptions

    @Option(name: .customLong("upstream-ca"), help: ArgumentHelp("PEM CA certificates trusted for https LLM upstreams, besides the system store (PARLEY_UPSTREAM_CA).", valueName: "file"))
    var upstreamCAFlag: String?
    var upstreamCA: String? { upstreamCAFlag ?? Environment.string("PARLEY_UPSTREAM_CA") }

    @Option(help: "Worker processes sharing the port (SO_REUSEPORT), each with --loops loops and its own descriptor limit; a supervisor restarts any that dies and /metrics sums them all (PARLEY_WORKERS).")
    var workers = Environment.int("PARLEY_WORKERS") ?? 1

    @Option(name: .customLong("worker-dir"), help: .hidden)
    var workerDir: String?

    @Option(name: .customLong("worker-name"), help: .hidden)
    var workerName: String?

    func validate() throws {
        guard (1...64).contains(workers) else { throw ValidationError("--workers must be 1...64") }
    }

    func run() throws {
        logging.bootstrap()
        var config = try server.configuration()
        let host = config.host, port = config.port, loops = config.loops
        let sessionAccess = try access.access()
        if let refusal = access.refusal(host: host, access: sessionAccess) {
            printError(refusal)
            throw ExitCode.failure
        }
        config.allowedOrigins = access.allowedOrigins
        let metricsListen = try access.metricsListen()
        if metricsListen != nil { config.servesMetrics = false }
        let upstreamTLS: TLSContext
        do {
            upstreamTLS = try TLSContext.client(caFile: upstreamCA)
        } catch {
            printError("parley: TLS: \(error)")
            throw ExitCode.failure
        }
        config.loopStarted = { loop in HTTPClient.install(on: loop, tls: upstreamTLS) }

        let shown = host.contains(":") ? "[\(host)]" : host
        let scheme = config.servesTLS ? "https" : "http"
        if workers > 1 && workerName == nil { return try supervise(shown: shown, scheme: scheme) }
        if let workerDir, let workerName {
            config.workerGroup = WorkerGroupMembership(directory: workerDir, name: workerName)
            // A worker goes when its supervisor goes, however the supervisor ended.
            guard let parent = Environment.int("PARLEY_SUPERVISOR_PID").map(Int32.init),
                  parley_die_with_parent(SIGTERM, parent) == 0 else {
                printError("parley: \(workerName): no supervisor; a worker is started by parley serve --workers N")
                throw ExitCode.failure
            }
        }

        var routes = Router.Builder()
        routes.get("/") { _ in ClientPage.response }
        routes.webSocket("/echo", name: "echo") { _, _ in EchoHandler.shared }
        // Keys come from a file or the environment, never from flags, where they would show in
        // the process list.
        let sessions = RealtimeEndpoint(model: try languageModel.makeModel(), modelName: languageModel.modelName,
                                        access: sessionAccess, speech: try speech.makeServices(), limits: try access.limits(),
                                        resume: try resume.settings())
        sessions.install(on: &routes)
        // The store is opened on each loop as it starts, not at its first session: until a remote
        // store's first connect has failed it counts as available, so with Redis down that session
        // would be given a token no other node could use, and never told resume_unavailable.
        if let store = sessions.resume.store {
            config.loopStarted = { [loopStarted = config.loopStarted] loop in
                loopStarted?(loop)
                store.prepare(on: loop)
            }
        }
        var twilio = try telephony.settings()
        twilio.requiresAuth = sessionAccess.required
        TwilioEndpoint(sessions: sessions, settings: twilio).install(on: &routes)
        let twilioPath = twilio.path

        let server: Server
        do {
            server = try Server(configuration: config, routes: routes)
        } catch let error as TLSError {
            printError("parley: TLS: \(error)")
            throw ExitCode.failure
        } catch {
            // Not a usage error: say what failed, without the usage text.
            printError("parley: cannot listen on \(host):\(port): \(error)")
            throw ExitCode.failure
        }
        // /metrics on a listener of its own, one loop, when asked (kept off a public port).
        var metricsServer: Server?
        if let (metricsHost, metricsPort) = metricsListen {
            var metricsConfig = ServerConfiguration()
            metricsConfig.host = metricsHost
            metricsConfig.port = metricsPort
            metricsConfig.loops = 1
            metricsConfig.servesMetrics = false
            var metricsRoutes = Router.Builder()
            let exposition = server.metricsExposition
            metricsRoutes.get("/metrics") { _ in exposition() }
            do {
                let started = try Server(configuration: metricsConfig, routes: metricsRoutes)
                try started.start()
                metricsServer = started
            } catch {
                printError("parley: cannot listen for metrics on \(metricsHost):\(metricsPort): \(error)")
                throw ExitCode.failure
            }
        }
        let metricsWhere = metricsServer.map { " (metrics on \($0.configuration.host):\($0.port))" } ?? ", /metrics"
        // A worker stays quiet: its supervisor says when all of them listen.
        if workerName == nil { print("parley listening on \(scheme)://\(shown):\(server.port)/  (\(loops) loops; sessions on /v1/realtime and /ws with the \(languageModel.summary); \(speech.summary); calls on \(twilioPath); /echo, /healthz\(metricsWhere))")
        }
        fflush(nil)  // flush every stream: make run and tests read this line through a pipe
        try server.runUntilTerminated(reloaded: Self.reportReload)
        metricsServer?.shutdown()
        metricsServer?.wait()
        if workerName == nil { print("parley stopped") }
    }

    /// The supervisor of `--workers N`: the workers get these same arguments, with the port made
    /// concrete (so that port 0 means one free port for all of them).
    private func supervise(shown: String, scheme: String) throws {
        // The workers share one signing key, so that a client secret minted by one opens a session
        // on any: without one given, the supervisor makes one and hands it down in the environment.
        if access.signingKeyFile == nil && Environment.string("PARLEY_SIGNING_KEY") == nil {
            setenv("PARLEY_SIGNING_KEY", Base64.encode(OpenSSL.randomBytes(48)), 1)
        }
        let host = try server.configuration().host, port = try server.configuration().port, loops = try server.configuration().loops
        let shared: Int
        let supervisor: Supervisor
        do {
            shared = try Supervisor.concretePort(host: host, port: port)
            supervisor = try Supervisor(count: workers, arguments: Self.workerArguments(port: shared), shutdownTimeout: try server.configuration().shutdownTimeout)
        } catch {
            printError("parley: cannot start the workers: \(error)")
            throw ExitCode.failure
        }
        do {
            try supervisor.run {
                print("parley listening on \(scheme)://\(shown):\(shared)/  (\(workers) workers × \(loops) loops; sessions on /v1/realtime and /ws with the \(languageModel.summary); \(speech.summary); calls on \((try? telephony.settings())?.path ?? "/twilio"); /echo, /healthz, /metrics summed over the workers)")
                fflush(nil)
            }
        } catch {
            printError("parley: \(error)")
            throw ExitCode.failure
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
