import CLinux
import Synchronization
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
    private let threads = Mutex<[pthread_t]>([])
    private let baseline = ResidentBaseline()

    /// Throws `SystemError` when it cannot listen, `TLSError` when a certificate, key or CA file
    /// cannot be used.
    public init(configuration: ServerConfiguration, routes: Router.Builder) throws {
        self.configuration = configuration
        var credentials: TLSCredentials?
        if let certificate = configuration.tlsCertificateFile, let key = configuration.tlsKeyFile {
            credentials = try TLSCredentials(certificateFile: certificate, keyFile: key)
        }
        let upstreamTLS = try TLSContext.client(caFile: configuration.upstreamCAFile)
        var listeners: [Int32] = []
        var port = configuration.port
        do {
            for _ in 0..<max(1, configuration.loops) {
                let fd = try Listener.open(host: configuration.host, port: port)
                listeners.append(fd)
                port = try Listener.boundPort(fd)
            }
        } catch {
            listeners.forEach(Sys.close)
            throw error
        }
        self.port = port
        let endpoints = routes.endpointNames.count
        var handles: [LoopHandle] = []
        for (i, fd) in listeners.enumerated() { handles.append(try LoopHandle(index: i, listenFD: fd, endpoints: endpoints)) }
        self.handles = handles

        var builder = routes
        let renderer = MetricsRenderer(loops: handles.map(\.metrics), endpointNames: routes.endpointNames, baseline: baseline,
                                       tls: credentials, sections: routes.metricsSections)
        builder.get("/healthz") { _ in HTTPResponse(status: .ok, contentType: "text/plain; charset=utf-8", body: "ok\n") }
        let group = configuration.workerGroup
        builder.get("/metrics") { _ in
            var text = renderer.render()
            if let group {
                text = MetricsMerge.merge([MetricsMerge.Source(worker: group.label(group.name), text: text)] + group.others())
            }
            return HTTPResponse(status: .ok, contentType: "text/plain; version=0.0.4; charset=utf-8", body: text)
        }
        context = ServerContext(configuration: configuration, router: Router(builder), tls: credentials, upstreamTLS: upstreamTLS)
    }

    /// Starts the loops and returns once all of them are running.
    public func start() throws(SystemError) {
        signal(SIGPIPE, SIG_IGN)
        let running = Atomic<Int>(0)
        var started: [pthread_t] = []
        for handle in handles {
            let context = self.context
            started.append(try Thread.spawn(name: "parley-loop-\(handle.index)") {
                guard let loop = try? EventLoop(handle: handle, context: context) else {
                    fatalError("event loop \(handle.index) could not start")
                }
                running.add(1, ordering: .releasing)
                loop.run()
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
        for handle in handles { handle.requestShutdown() }
    }

    /// Blocks until every loop has finished.
    public func wait() {
        let started = threads.withLock { threads in
            defer { threads = [] }
            return threads
        }
        for thread in started { pthread_join(thread, nil) }
    }

    /// Loads the TLS certificate and key again from their files. New connections use them; open
    /// sessions carry on with the old ones. On failure the old ones stay in service.
    public func reloadCertificates() throws(TLSError) {
        guard let tls = context.tls else { throw TLSError("this server does not serve TLS") }
        try tls.reload()
    }

    /// Runs until SIGINT or SIGTERM, then shuts down gracefully and returns. SIGHUP reloads the TLS
    /// certificate (`reload`, called with the outcome, reports it).
    public func runUntilTerminated(reloaded report: (Result<Void, TLSError>) -> Void = { _ in }) throws(SystemError) {
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGHUP)
        // Blocked before the loops start, so their threads inherit the mask and only sigwait sees them.
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        try start()
        var received: Int32 = 0
        while true {
            sigwait(&signals, &received)
            guard received == SIGHUP else { break }
            report(Result { () throws(TLSError) in try reloadCertificates() })
        }
        shutdown()
        wait()
    }

    /// The Prometheus text the `/metrics` route serves.
    public func renderMetrics() -> String {
        MetricsRenderer(loops: handles.map(\.metrics), endpointNames: context.router.endpointNames, baseline: baseline,
                        tls: context.tls, sections: context.router.metricsSections).render()
    }
}

/// Opening the listening sockets.
enum Listener {
    static func open(host: String, port: Int) throws(SystemError) -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let info = list else {
            throw SystemError("getaddrinfo(\(host))", errno: EINVAL)
        }
        defer { freeaddrinfo(list) }
        let fd = try Sys.retrying("socket") {
            socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        }
        do {
            try Sys.setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1)
            try Sys.setOption(fd, SOL_SOCKET, SO_REUSEPORT, 1)
            _ = try Sys.retrying("bind(\(host):\(port))") { bind(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) }
            _ = try Sys.retrying("listen") { listen(fd, 4096) }
        } catch {
            Sys.close(fd)
            throw error
        }
        return fd
    }

    static func boundPort(_ fd: Int32) throws(SystemError) -> Int {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = try withUnsafeMutablePointer(to: &storage) { pointer throws(SystemError) in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address throws(SystemError) in
                try Sys.retrying("getsockname") { getsockname(fd, address, &length) }
            }
        }
        let raw = withUnsafeBytes(of: storage) { bytes in
            // sin_port and sin6_port sit at the same offset, in network order.
            UInt16(bytes[2]) << 8 | UInt16(bytes[3])
        }
        return Int(raw)
    }
}

/// A pthread running a closure: the loops want real threads, one each, for their whole life; the
/// load harness uses it for work that must not stop its loop (a background scrape).
public enum Thread {
    private final class Start {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }

    public static func spawn(name: String, _ body: @escaping @Sendable () -> Void) throws(SystemError) -> pthread_t {
        var thread = pthread_t()
        let start = Unmanaged.passRetained(Start(body)).toOpaque()
        let rc = pthread_create(&thread, nil, { context in
            let start = Unmanaged<Start>.fromOpaque(context!).takeRetainedValue()
            start.body()
            return nil
        }, start)
        guard rc == 0 else {
            Unmanaged<Start>.fromOpaque(start).release()
            throw SystemError("pthread_create", errno: rc)
        }
        _ = parley_set_thread_name(thread, String(name.prefix(15)))
        return thread
    }
}
