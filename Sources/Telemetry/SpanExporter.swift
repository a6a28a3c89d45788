import Loop
import Metrics
import Synchronization
import Upstream

/// OTLP/HTTP's batch span processor and exporter in one: spans that end are queued (at most
/// `maxQueue`; past it they are dropped and counted, so a collector that is down costs a counter,
/// never memory), and a loop of the exporter's own (its thread, its HTTP client: Parley's upstream
/// client, no SwiftNIO) sends them every `scheduleDelayMs`, or sooner once a batch is full, one
/// export at a time. A failed export is counted and its spans dropped: no retry queue to grow.
public final class SpanExporter: Sendable {
    private let settings: TraceSettings
    private let url: UpstreamURL
    private let queue = Mutex<[FinishedSpan]>([])
    /// The exporter's loop, once started.
    private let handle = Mutex<LoopHandle?>(nil)
    private let metrics: TraceMetrics
    /// Where its series are declared (for /metrics).
    public let registry: MetricsRegistry
    private let resource: [(String, SpanValue)]
    /// The version the scope reports.
    static let scopeVersion = "1"

    public init(settings: TraceSettings, registry: MetricsRegistry) throws(TraceSettings.Refusal) {
        guard let url = UpstreamURL(settings.endpoint) else { throw TraceSettings.Refusal(variable: "OTEL_EXPORTER_OTLP_ENDPOINT", why: "is not a URL Parley can send to") }
        self.settings = settings
        self.url = url
        self.registry = registry
        metrics = TraceMetrics(registry: registry)
        resource = [("service.name", .string(settings.serviceName)), ("telemetry.sdk.name", .string("parley")),
                    ("telemetry.sdk.language", .string("swift")), ("host.name", .string(Sys.hostName()))]
    }

    /// Starts the exporter's loop on a thread of its own.
    public func start() throws(SystemError) {
        let loop = try EventLoop(handle: LoopHandle(index: -1))
        HTTPClient.install(on: loop, tls: nil)
        handle.withLock { $0 = loop.handle }
        let box = LoopBox(loop)
        try Thread.spawn(name: "parley-otlp") { [self] in
            let loop = box.loop
            schedule(on: loop)
            loop.run()
        }
    }

    /// Queues a span that ended; drops it (counted) when the queue is full.
    func add(_ span: FinishedSpan) {
        let full = queue.withLock { queue -> Int? in
            guard queue.count < settings.maxQueue else { return nil }
            queue.append(span)
            return queue.count
        }
        guard let full else { return metrics.dropped.add(1) }
        if full == settings.maxBatch { flushSoon() }
    }

    /// Asks the exporter's loop to send what is queued now.
    func flushSoon() {
        handle.withLock { $0 }?.execute { [weak self] in self?.wake?() }
    }

    /// The loop's way to export at once (set on the loop).
    private nonisolated(unsafe) var wake: (() -> Void)?

    private func schedule(on loop: EventLoop) {
        var sending = false
        func export() {
            guard !sending else { return }
            let batch = queue.withLock { queue -> [FinishedSpan] in
                let taken = Array(queue.prefix(settings.maxBatch))
                queue.removeFirst(taken.count)
                return taken
            }
            guard !batch.isEmpty else { return }
            sending = true
            let body = OTLPEncoding.request(spans: batch, resource: resource, scopeVersion: Self.scopeVersion)
            let request = HTTPClientRequest(method: "POST", url: url, headers: [("Content-Type", "application/x-protobuf")] + settings.headers, body: body)
            var status = 0
            let timeout = loop.schedule(after: Double(settings.timeoutMs) / 1000) { [metrics] in
                guard sending else { return }
                sending = false
                metrics.failures.add(1)
                metrics.dropped.add(batch.count)
            }
            loop.httpClient.send(request, onHead: { status = $0.status }) { [metrics] result in
                timeout.cancel()
                guard sending else { return }
                sending = false
                if case .success = result, (200..<300).contains(status) {
                    metrics.exported.add(batch.count)
                } else {
                    // The collector's answer may quote the request's headers: never logged here.
                    metrics.failures.add(1)
                    metrics.dropped.add(batch.count)
                }
                if self.queue.withLock({ $0.count }) >= self.settings.maxBatch { export() }
            }
        }
        wake = export
        func tick() {
            export()
            _ = loop.schedule(after: Double(settings.scheduleDelayMs) / 1000) { tick() }
        }
        tick()
    }
}

/// An event loop handed to the thread that runs it.
private final class LoopBox: @unchecked Sendable {
    let loop: EventLoop
    init(_ loop: EventLoop) { self.loop = loop }
}

/// The exporter's series: spans exported, dropped (queue full, or their export failed), and
/// failed exports.
struct TraceMetrics: Sendable {
    let exported: MetricFamily
    let dropped: MetricFamily
    let failures: MetricFamily

    init(registry: MetricsRegistry) {
        exported = MetricFamily(name: "parley_trace_spans_exported_total", help: "Spans sent to the OTLP collector.", registry: registry)
        dropped = MetricFamily(name: "parley_trace_spans_dropped_total", help: "Spans dropped: the export queue was full, or their export failed.", registry: registry)
        failures = MetricFamily(name: "parley_trace_export_failures_total", help: "OTLP exports that failed (collector down, slow or refusing).", registry: registry)
    }
}
