import Loop
import Synchronization
import Tracing
#if canImport(Glibc)
import Glibc
#endif

/// Parley's implementation of swift-distributed-tracing's `Tracer`: spans with W3C trace context
/// (`traceparent` in and out), sampled as `OTEL_TRACES_SAMPLER` says, handed when they end to the
/// `SpanExporter`, which sends them over OTLP/HTTP off the serving loops. A span that is not
/// sampled records nothing and is never queued, so a session whose trace is not kept pays for its
/// ids only.
public final class ParleyTracer: Tracer {
    public typealias Span = ParleySpan

    public let settings: TraceSettings
    public let exporter: SpanExporter

    public init(settings: TraceSettings, exporter: SpanExporter) {
        self.settings = settings
        self.exporter = exporter
    }

    public func startSpan<Instant: TracerInstant>(_ operationName: String, context: @autoclosure () -> InstrumentationContext, ofKind kind: SpanKind,
                                                  at instant: @autoclosure () -> Instant, function: String, file fileID: String, line: UInt) -> ParleySpan {
        var context = context()
        let parent = context.trace
        let traceID = parent?.traceID ?? Self.randomID(16)
        let sampled = Self.decide(settings.sampler, parent: parent, traceID: traceID)
        let own = TraceContext(traceID: traceID, spanID: Self.randomID(8), sampled: sampled)
        context.trace = own
        return ParleySpan(name: operationName, context: context, trace: own, parent: parent?.spanID, kind: FinishedSpan.Kind(kind),
                          start: instant().nanosecondsSinceEpoch, exporter: sampled ? exporter : nil)
    }

    /// Whether a span with this parent and trace id is kept.
    static func decide(_ sampler: TraceSettings.Sampler, parent: TraceContext?, traceID: [UInt8]) -> Bool {
        switch sampler {
        case .always: return true
        case .never: return false
        case .ratio(let ratio):
            if ratio >= 1 { return true }
            // The id's first 8 bytes as a number against ratio of their range: every process
            // that sees this trace decides alike.
            let value = traceID.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) } >> 1
            return Double(value) < ratio * Double(UInt64.max >> 1)
        case .parentBased(let root):
            if let parent { return parent.sampled }
            return decide(root, parent: nil, traceID: traceID)
        }
    }

    static func randomID(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        var bytes: [UInt8] = []
        while bytes.count < count {
            let word = generator.next()
            for shift in stride(from: 0, to: 64, by: 8) where bytes.count < count { bytes.append(UInt8(truncatingIfNeeded: word >> UInt64(shift))) }
        }
        // All zeros is not a valid id (W3C Trace Context, section 3.2.2.3).
        if bytes.allSatisfy({ $0 == 0 }) { bytes[bytes.count - 1] = 1 }
        return bytes
    }

    public func forceFlush() { exporter.flushSoon() }

    public func extract<Carrier, Extract>(_ carrier: Carrier, into context: inout InstrumentationContext, using extractor: Extract)
    where Extract: Extractor, Extract.Carrier == Carrier {
        if let header = extractor.extract(key: "traceparent", from: carrier), let parent = TraceContext(traceparent: header) {
            context.trace = parent
        }
    }

    public func inject<Carrier, Inject>(_ context: InstrumentationContext, into carrier: inout Carrier, using injector: Inject)
    where Inject: Injector, Inject.Carrier == Carrier {
        if let trace = context.trace { injector.inject(trace.traceparent, forKey: "traceparent", into: &carrier) }
    }
}

/// One span of a `ParleyTracer`. Its fields change under a lock, so it may be ended on any thread.
public final class ParleySpan: Tracing.Span {
    public let context: InstrumentationContext
    let trace: TraceContext
    private let parent: [UInt8]?
    private let kind: FinishedSpan.Kind
    private let start: UInt64
    /// Where it goes when it ends; nil when it is not sampled.
    private let exporter: SpanExporter?
    private struct State {
        var name: String
        var attributes = SpanAttributes()
        var events: [FinishedSpan.Event] = []
        var status: FinishedSpan.Status = .unset
        var statusMessage = ""
        var ended = false
    }
    private let state: Mutex<State>

    init(name: String, context: InstrumentationContext, trace: TraceContext, parent: [UInt8]?, kind: FinishedSpan.Kind, start: UInt64, exporter: SpanExporter?) {
        self.context = context
        self.trace = trace
        self.parent = parent
        self.kind = kind
        self.start = start
        self.exporter = exporter
        state = Mutex(State(name: name))
    }

    public var isRecording: Bool { exporter != nil && !state.withLock(\.ended) }

    public var operationName: String {
        get { state.withLock(\.name) }
        set { state.withLock { $0.name = newValue } }
    }

    public var attributes: SpanAttributes {
        get { state.withLock(\.attributes) }
        set {
            guard exporter != nil else { return }
            state.withLock { $0.attributes = newValue }
        }
    }

    public func setStatus(_ status: SpanStatus) {
        guard exporter != nil else { return }
        state.withLock {
            $0.status = status.code == .ok ? .ok : .error
            $0.statusMessage = status.message ?? ""
        }
    }

    public func addEvent(_ event: SpanEvent) {
        guard exporter != nil else { return }
        state.withLock { $0.events.append(.init(name: event.name, nanoseconds: event.nanosecondsSinceEpoch, attributes: Self.values(event.attributes))) }
    }

    public func recordError<Instant: TracerInstant>(_ error: Error, attributes: SpanAttributes, at instant: @autoclosure () -> Instant) {
        guard exporter != nil else { return }
        var all = attributes
        all["exception.message"] = "\(error)"
        addEvent(SpanEvent(name: "exception", at: instant(), attributes: all))
    }

    public func addLink(_ link: SpanLink) {}

    public func end<Instant: TracerInstant>(at instant: @autoclosure () -> Instant) {
        let finished: State? = state.withLock { state in
            guard !state.ended else { return nil }
            state.ended = true
            return state
        }
        guard let exporter, let finished else { return }
        exporter.add(FinishedSpan(context: trace, parentSpanID: parent, name: finished.name, kind: kind, startNanoseconds: start,
                                  endNanoseconds: max(start, instant().nanosecondsSinceEpoch), attributes: Self.values(finished.attributes),
                                  events: finished.events, status: finished.status, statusMessage: finished.statusMessage))
    }

    /// The scalar attributes as OTLP values (arrays and other kinds are written as text).
    static func values(_ attributes: SpanAttributes) -> [(String, SpanValue)] {
        var out: [(String, SpanValue)] = []
        attributes.forEach { key, value in
            switch value {
            case .string(let text): out.append((key, .string(text)))
            case .int64(let number): out.append((key, .int(number)))
            case .int32(let number): out.append((key, .int(Int64(number))))
            case .double(let number): out.append((key, .double(number)))
            case .bool(let flag): out.append((key, .bool(flag)))
            default: out.append((key, .string("\(value)")))
            }
        }
        return out
    }
}

extension FinishedSpan.Kind {
    init(_ kind: SpanKind) {
        switch kind {
        case .server: self = .server
        case .client: self = .client
        case .producer: self = .producer
        case .consumer: self = .consumer
        case .internal: self = .internal
        }
    }
}

/// A moment as `TracerInstant` wants it, from this process's monotonic clock: the wall clock now,
/// less how long ago the moment was (the session marks its stages on the monotonic clock).
public struct WallInstant: TracerInstant {
    public let nanosecondsSinceEpoch: UInt64

    public init(monotonic nanoseconds: UInt64) {
        let now = MonotonicClock.nanoseconds()
        nanosecondsSinceEpoch = WallClock.nanoseconds() &- (now &- min(now, nanoseconds))
    }

    public static func < (a: WallInstant, b: WallInstant) -> Bool { a.nanosecondsSinceEpoch < b.nanosecondsSinceEpoch }
}
