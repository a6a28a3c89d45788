import ArgumentParser
import Server
import Session
import CLinux
import TLS
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

    @Option(help: "Address to listen on (PARLEY_HOST).")
    var host = Environment.string("PARLEY_HOST") ?? "127.0.0.1"

    @Option(help: "Port to listen on; 0 picks a free one (PARLEY_PORT).")
    var port = Environment.int("PARLEY_PORT") ?? 8080

    @Option(help: "Event loops, one thread each; default one per core (PARLEY_LOOPS).")
    var loops = Environment.int("PARLEY_LOOPS") ?? ServerConfiguration().loops

    @Option(help: "Largest WebSocket message in bytes; larger ones close with 1009 (PARLEY_MAX_MESSAGE_BYTES).")
    var maxMessageBytes = Environment.int("PARLEY_MAX_MESSAGE_BYTES") ?? ServerConfiguration().maxMessageBytes

    @Option(help: "Most WebSocket sessions; past it upgrades get 503, /healthz and /metrics still answer (PARLEY_MAX_CONNECTIONS).")
    var maxConnections = Environment.int("PARLEY_MAX_CONNECTIONS") ?? ServerConfiguration().maxConnections

    @Option(help: "Bytes queued for a client that does not read before it is dropped (PARLEY_MAX_OUTBOUND_BYTES).")
    var maxOutboundBytes = Environment.int("PARLEY_MAX_OUTBOUND_BYTES") ?? ServerConfiguration().maxOutboundBytes

    @Option(help: "Largest HTTP request body in bytes; larger gets 413 (PARLEY_MAX_BODY_BYTES).")
    var maxBodyBytes = Environment.int("PARLEY_MAX_BODY_BYTES") ?? ServerConfiguration().maxBodyBytes

    @Option(help: "Seconds to send a complete request head; also the HTTP keep-alive idle time (PARLEY_HANDSHAKE_TIMEOUT).")
    var handshakeTimeout = Environment.double("PARLEY_HANDSHAKE_TIMEOUT") ?? ServerConfiguration().handshakeTimeout

    @Option(help: "Seconds of WebSocket silence before a server ping (PARLEY_IDLE_TIMEOUT).")
    var idleTimeout = Environment.double("PARLEY_IDLE_TIMEOUT") ?? ServerConfiguration().idleTimeout

    @Option(help: "Seconds to wait for traffic after that ping before dropping (PARLEY_PING_TIMEOUT).")
    var pingTimeout = Environment.double("PARLEY_PING_TIMEOUT") ?? ServerConfiguration().pingTimeout

    @Option(help: "Seconds to wait for the peer's side of a close (PARLEY_CLOSE_TIMEOUT).")
    var closeTimeout = Environment.double("PARLEY_CLOSE_TIMEOUT") ?? ServerConfiguration().closeTimeout

    @Option(help: "Seconds a graceful shutdown waits before dropping sessions (PARLEY_SHUTDOWN_TIMEOUT).")
    var shutdownTimeout = Environment.double("PARLEY_SHUTDOWN_TIMEOUT") ?? ServerConfiguration().shutdownTimeout

    @Option(name: .customLong("tls-cert"), help: ArgumentHelp("PEM certificate chain; with --tls-key the port serves HTTPS and wss only, and SIGHUP reloads both (PARLEY_TLS_CERT).", valueName: "file"))
    var tlsCertFlag: String?
    var tlsCert: String? { tlsCertFlag ?? Environment.string("PARLEY_TLS_CERT") }

    @Option(name: .customLong("tls-key"), help: ArgumentHelp("PEM private key for --tls-cert (PARLEY_TLS_KEY).", valueName: "file"))
    var tlsKeyFlag: String?
    var tlsKey: String? { tlsKeyFlag ?? Environment.string("PARLEY_TLS_KEY") }

    @Option(name: .customLong("tls-handshake-timeout"), help: "Seconds a client has to complete the TLS handshake (PARLEY_TLS_HANDSHAKE_TIMEOUT).")
    var tlsHandshakeTimeout = Environment.double("PARLEY_TLS_HANDSHAKE_TIMEOUT") ?? ServerConfiguration().tlsHandshakeTimeout

    @Option(name: .customLong("max-tls-handshakes"), help: "TLS handshakes in progress at once; past it new connections are closed (PARLEY_MAX_TLS_HANDSHAKES).")
    var maxTLSHandshakes = Environment.int("PARLEY_MAX_TLS_HANDSHAKES") ?? ServerConfiguration().maxTLSHandshakes

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
        guard (tlsCert == nil) == (tlsKey == nil) else { throw ValidationError("--tls-cert and --tls-key go together") }
        guard maxTLSHandshakes >= 1 else { throw ValidationError("--max-tls-handshakes must be at least 1") }
        guard tlsHandshakeTimeout > 0 else { throw ValidationError("--tls-handshake-timeout must be positive") }
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0...65535") }
        guard loops >= 1 else { throw ValidationError("--loops must be at least 1") }
        guard maxMessageBytes >= 125 else { throw ValidationError("--max-message-bytes must be at least 125") }
        guard maxConnections >= 1 else { throw ValidationError("--max-connections must be at least 1") }
        guard maxOutboundBytes >= 1024 else { throw ValidationError("--max-outbound-bytes must be at least 1024") }
        guard maxBodyBytes >= 0 else { throw ValidationError("--max-body-bytes must not be negative") }
        for (name, value) in [("handshake", handshakeTimeout), ("idle", idleTimeout), ("ping", pingTimeout),
                              ("close", closeTimeout), ("shutdown", shutdownTimeout)] where value <= 0 {
            throw ValidationError("--\(name)-timeout must be positive")
        }
    }

    func run() throws {
        var config = ServerConfiguration()
        config.host = host
        config.port = port
        config.loops = loops
        config.maxMessageBytes = maxMessageBytes
        config.maxConnections = maxConnections
        config.maxOutboundBytes = maxOutboundBytes
        config.maxBodyBytes = maxBodyBytes
        config.handshakeTimeout = handshakeTimeout
        config.idleTimeout = idleTimeout
        config.pingTimeout = pingTimeout
        config.closeTimeout = closeTimeout
        config.shutdownTimeout = shutdownTimeout
        config.tlsCertificateFile = tlsCert
        config.tlsKeyFile = tlsKey
        config.tlsHandshakeTimeout = tlsHandshakeTimeout
        config.maxTLSHandshakes = maxTLSHandshakes
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
        // PARLEY_API_KEY, when set, is the key session clients must present (kept out of flags,
        // where it would show in the process list).
        let sessions = RealtimeEndpoint(model: try languageModel.makeModel(), modelName: languageModel.modelName,
                                        requiredKey: Environment.string("PARLEY_API_KEY"), speech: try speech.makeServices())
        sessions.install(on: &routes)

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
        // A worker stays quiet: its supervisor says when all of them listen.
        if workerName == nil { print("parley listening on \(scheme)://\(shown):\(server.port)/  (\(loops) loops; sessions on /v1/realtime and /ws with the \(languageModel.summary); \(speech.summary); /echo, /healthz, /metrics)")
        }
        fflush(nil)  // flush every stream: make run and tests read this line through a pipe
        try server.runUntilTerminated(reloaded: Self.reportReload)
        if workerName == nil { print("parley stopped") }
    }

    /// The supervisor of `--workers N`: the workers get these same arguments, with the port made
    /// concrete (so that port 0 means one free port for all of them).
    private func supervise(shown: String, scheme: String) throws {
        let shared: Int
        let supervisor: Supervisor
        do {
            shared = try Supervisor.concretePort(host: host, port: port)
            supervisor = try Supervisor(count: workers, arguments: Self.workerArguments(port: shared), shutdownTimeout: shutdownTimeout)
        } catch {
            printError("parley: cannot start the workers: \(error)")
            throw ExitCode.failure
        }
        do {
            try supervisor.run {
                print("parley listening on \(scheme)://\(shown):\(shared)/  (\(workers) workers × \(loops) loops; sessions on /v1/realtime and /ws with the \(languageModel.summary); \(speech.summary); /echo, /healthz, /metrics summed over the workers)")
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
