import Loop
import Metrics
import Synchronization
import TLS
#if canImport(Glibc)
import Glibc
#endif

/// Parley's network server: `loops` event-loop threads, each with its own SO_REUSEPORT listener.
///
///     let server = try Server(configuration: config, routes: builder)
///     try server.start()          // returns once every loop is running
///     server.shutdown()           // from any thread: 1001 to every session, bounded drain
///     server.wait()
public final class Server: Sendable {
    public let configuration: ServerConfiguration
    /// The bound port (useful with `port: 0`).
    public let port: Int
    private let context: ServerContext
    private let handles: [LoopHandle]
    private let listeners: [Int32]
    private let metrics: [LoopMetrics]
    private let threads = Mutex<[pthread_t]>([])
    private let baseline = ResidentBaseline()
    /// This server's series, and (included) those its routes added.
    private let metricsRegistry = MetricsRegistry()
    /// `/metrics`' answer: this process's series, summed over the workers with `--workers`.
    public let metricsExposition: @Sendable () -> HTTPResponse

    /// Throws `SystemError` when it cannot listen, `TLSError` when a certificate, key or CA file
    /// cannot be used.
    public init(configuration: ServerConfiguration, routes: Router.Builder) throws {
        self.configuration = configuration
        var credentials: TLSCredentials?
        if let certificate = configuration.tlsCertificateFile, let key = configuration.tlsKeyFile {
            credentials = try TLSCredentials(certificateFile: certificate, keyFile: key)
        }
        var listeners: [Int32] = []
        var port = configuration.port
        do {
            for _ in 0..<max(1, configuration.loops) {
                let fd = try Self.listen(host: configuration.host, port: port)
                listeners.append(fd)
                port = try Sys.localAddress(fd).port
            }
        } catch {
            listeners.forEach(Sys.close)
            throw error
        }
        self.port = port
        self.listeners = listeners
        let endpoints = routes.endpointNames.count
        handles = try listeners.indices.map { i throws(SystemError) in try LoopHandle(index: i, clock: configuration.clock) }
        metrics = listeners.map { _ in LoopMetrics(endpoints: endpoints) }

        var builder = routes
        let drain = DrainState()
        ServerMetrics.declare(in: metricsRegistry, loops: metrics, lag: handles.map(\.lag), endpointNames: routes.endpointNames, baseline: baseline,
                              drain: drain, tls: credentials)
        for registry in routes.metricsRegistries { metricsRegistry.include(registry) }
        let registry = metricsRegistry
        builder.get("/healthz") { _ in HTTPResponse(status: .ok, contentType: "text/plain; charset=utf-8", body: "ok\n") }
        // Readiness, unlike liveness, goes 503 at SIGTERM: balancers stop sending sessions here
        // while the ones held drain (docs/operations.md, "Drain"); and while a check the routes
        // added says why not (the box's speech work at its capacity: "speech_busy").
        let readiness = builder.readinessChecks
        builder.get("/readyz") { _ in
            let reason = drain.isDraining ? "draining" : readiness.lazy.compactMap { $0() }.first
            return reason.map { HTTPResponse(status: .serviceUnavailable, contentType: "text/plain; charset=utf-8", body: "\($0)\n") }
                ?? HTTPResponse(status: .ok, contentType: "text/plain; charset=utf-8", body: "ready\n")
        }
        let group = configuration.workerGroup
        let exposition: @Sendable () -> HTTPResponse = {
            var text = registry.render()
            if let group {
                text = MetricsMerge.merge([MetricsMerge.Source(worker: group.label(group.name), text: text)] + group.others())
            }
            return HTTPResponse(status: .ok, contentType: "text/plain; version=0.0.4; charset=utf-8", body: text)
        }
        metricsExposition = exposition
        if configuration.servesMetrics { builder.get("/metrics") { _ in exposition() } }
        context = ServerContext(configuration: configuration, router: Router(builder), tls: credentials, drain: drain)
    }

    /// Starts the loops and returns once all of them are running.
    public func start() throws(SystemError) {
        signal(SIGPIPE, SIG_IGN)
        let running = Atomic<Int>(0)
        var started: [pthread_t] = []
        for (i, handle) in handles.enumerated() {
            let context = self.context, metrics = self.metrics[i], listenFD = listeners[i]
            started.append(try Thread.spawn(name: "parley-loop-\(handle.index)") {
                let loop: EventLoop
                let serving: ServingLoop
                do {
                    loop = try EventLoop(handle: handle)
                    serving = try ServingLoop(loop: loop, context: context, metrics: metrics, listenFD: listenFD)
                } catch {
                    fatalError("event loop \(handle.index) could not start: \(error)")
                }
                context.configuration.loopStarted?(loop)
                running.add(1, ordering: .releasing)
                withExtendedLifetime(serving) { loop.run() }
            })
        }
        while running.load(ordering: .acquiring) < handles.count { usleep(1000) }
        baseline.record()
        if let group = configuration.workerGroup {
            group.publish(renderMetrics())
            started.append(try Thread.spawn(name: "parley-metrics") { [self] in publishUntilShutdown(group) })
        }
        threads.withLock { $0 = started }
    }

    private let stopping = Atomic<Bool>(false)

    /// A worker's metrics, for the other workers to merge, until shutdown.
    private func publishUntilShutdown(_ group: WorkerGroupMembership) {
        while !stopping.load(ordering: .acquiring) {
            usleep(UInt32(WorkerGroupMembership.interval * 1_000_000))
            group.publish(renderMetrics())
        }
    }

    /// Begins a graceful shutdown; callable from any thread, more than once.
    public func shutdown() {
        stopping.store(true, ordering: .releasing)
        for handle in handles { handle.requestStop() }
    }

    /// Blocks until every loop has finished.
    public func wait() {
        let started = threads.withLock { threads in
            defer { threads = [] }
            return threads
        }
        for thread in started { Thread.join(thread) }
    }

    /// Loads the TLS certificate and key again from their files. New connections use them; open
    /// sessions carry on with the old ones. On failure the old ones stay in service.
    public func reloadCertificates() throws(TLSError) {
        guard let tls = context.tls else { throw TLSError("this server does not serve TLS") }
        try tls.reload()
    }

    /// Runs until SIGINT or SIGTERM, then shuts down gracefully and returns. `started` is called
    /// once every loop runs (and has opened its stream ports). SIGHUP reloads the TLS certificate
    /// (`reload`, called with the outcome, reports it).
    public func runUntilTerminated(started: () -> Void = {}, reloaded report: (Result<Void, TLSError>) -> Void = { _ in }) throws(SystemError) {
        // Blocked before the loops start, so their threads inherit the mask and only sigwait sees them.
        let signals = Sys.blockSignals([SIGINT, SIGTERM, SIGHUP])
        try start()
        started()
        while true {
            guard Sys.waitForSignal(signals) == SIGHUP else { break }
            report(Result { () throws(TLSError) in try reloadCertificates() })
        }
        shutdown()
        wait()
    }

    /// The Prometheus text the `/metrics` route serves.
    public func renderMetrics() -> String {
        metricsRegistry.render()
    }
}

extension Server {
    /// A listening socket for `host` and `port`: the first address the resolver gives.
    static func listen(host: String, port: Int) throws(SystemError) -> Int32 {
        guard let address = try Sys.resolve(host: host, port: port, passive: true).first else {
            throw SystemError("getaddrinfo(\(host))", errno: EINVAL)
        }
        let fd = try Sys.streamSocket(family: address.family)
        do {
            try Sys.listen(fd, on: address)
        } catch {
            Sys.close(fd)
            throw error
        }
        return fd
    }
}
