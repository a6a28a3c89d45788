import Loop
/// What the OpenTelemetry environment variables say about traces
/// (https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/): where
/// to export (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, or `OTEL_EXPORTER_OTLP_ENDPOINT` plus
/// `/v1/traces`), with which headers (`OTEL_EXPORTER_OTLP_HEADERS`: `k=v,k2=v2`, often a
/// collector's key, so never logged), as which service (`OTEL_SERVICE_NAME`), which traces to keep
/// (`OTEL_TRACES_SAMPLER` and its `_ARG`), and the batch processor's delay and sizes
/// (`OTEL_BSP_*`). Tracing is off without an endpoint, or with `OTEL_SDK_DISABLED=true` or
/// `OTEL_TRACES_EXPORTER=none`.
public struct TraceSettings: Sendable, Equatable {
    public enum Sampler: Sendable, Equatable {
        case always, never
        /// A trace id's first 8 bytes under `ratio` of their range: the same verdict on every
        /// process that sees the trace.
        case ratio(Double)
        /// A span with a parent follows the parent's verdict; a root, `root`'s.
        indirect case parentBased(root: Sampler)
    }

    public var endpoint: String
    public var headers: [(String, String)]
    public var serviceName: String
    public var sampler: Sampler
    /// Milliseconds between exports (`OTEL_BSP_SCHEDULE_DELAY`, 5000).
    public var scheduleDelayMs: Int
    /// Spans held for export at most (`OTEL_BSP_MAX_QUEUE_SIZE`, 2048); past it, dropped and counted.
    public var maxQueue: Int
    /// Spans in one export at most (`OTEL_BSP_MAX_EXPORT_BATCH_SIZE`, 512).
    public var maxBatch: Int
    /// Milliseconds an export may take (`OTEL_EXPORTER_OTLP_TIMEOUT`, 10000).
    public var timeoutMs: Int

    public static func == (a: TraceSettings, b: TraceSettings) -> Bool {
        a.endpoint == b.endpoint && a.headers.elementsEqual(b.headers, by: ==) && a.serviceName == b.serviceName && a.sampler == b.sampler
            && a.scheduleDelayMs == b.scheduleDelayMs && a.maxQueue == b.maxQueue && a.maxBatch == b.maxBatch && a.timeoutMs == b.timeoutMs
    }

    /// The settings from `environment` (a lookup, so tests pass their own), nil when tracing is
    /// off; a value it cannot use is the `Refusal` naming it.
    public static func read(_ environment: (String) -> String?) -> Result<TraceSettings?, Refusal> {
        if environment("OTEL_SDK_DISABLED")?.lowercased() == "true" || environment("OTEL_TRACES_EXPORTER")?.lowercased() == "none" { return .success(nil) }
        let endpoint: String
        if let traces = environment("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), !traces.isEmpty {
            endpoint = traces
        } else if let base = environment("OTEL_EXPORTER_OTLP_ENDPOINT"), !base.isEmpty {
            endpoint = (base.hasSuffix("/") ? String(base.dropLast()) : base) + "/v1/traces"
        } else {
            return .success(nil)
        }
        guard endpoint.hasPrefix("http://") || endpoint.hasPrefix("https://") else {
            return .failure(Refusal(variable: "OTEL_EXPORTER_OTLP_ENDPOINT", why: "must be an http:// or https:// URL"))
        }
        if let protocolName = environment("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") ?? environment("OTEL_EXPORTER_OTLP_PROTOCOL"),
           protocolName != "http/protobuf" {
            return .failure(Refusal(variable: "OTEL_EXPORTER_OTLP_PROTOCOL", why: "only http/protobuf is spoken (not \(protocolName))"))
        }
        var headers: [(String, String)] = []
        for pair in (environment("OTEL_EXPORTER_OTLP_TRACES_HEADERS") ?? environment("OTEL_EXPORTER_OTLP_HEADERS") ?? "").split(separator: ",") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, !parts[0].trimmingCharacters(in: " ").isEmpty else {
                return .failure(Refusal(variable: "OTEL_EXPORTER_OTLP_HEADERS", why: "must be key=value pairs separated by commas"))
            }
            let value = percentDecoded(parts[1].trimmingCharacters(in: " "))
            // Often a collector's key (`x-honeycomb-team=…`, `authorization=Bearer …`).
            Secrets.register(value)
            headers.append((parts[0].trimmingCharacters(in: " "), value))
        }
        let argument = environment("OTEL_TRACES_SAMPLER_ARG").flatMap(Double.init)
        let ratio = min(1, max(0, argument ?? 1))
        let sampler: Sampler
        switch environment("OTEL_TRACES_SAMPLER")?.lowercased() ?? "parentbased_always_on" {
        case "always_on": sampler = .always
        case "always_off": sampler = .never
        case "traceidratio": sampler = .ratio(ratio)
        case "parentbased_always_on": sampler = .parentBased(root: .always)
        case "parentbased_always_off": sampler = .parentBased(root: .never)
        case "parentbased_traceidratio": sampler = .parentBased(root: .ratio(ratio))
        case let other: return .failure(Refusal(variable: "OTEL_TRACES_SAMPLER", why: "\(other) is not a sampler this server has"))
        }
        func number(_ name: String, _ fallback: Int) -> Int { environment(name).flatMap(Int.init).map { max(1, $0) } ?? fallback }
        return .success(TraceSettings(endpoint: endpoint, headers: headers, serviceName: environment("OTEL_SERVICE_NAME").flatMap { $0.isEmpty ? nil : $0 } ?? "parley",
                                      sampler: sampler, scheduleDelayMs: number("OTEL_BSP_SCHEDULE_DELAY", 5000),
                                      maxQueue: number("OTEL_BSP_MAX_QUEUE_SIZE", 2048), maxBatch: number("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512),
                                      timeoutMs: number("OTEL_EXPORTER_OTLP_TIMEOUT", 10_000)))
    }

    public struct Refusal: Error, CustomStringConvertible, Equatable {
        public let variable: String
        public let why: String
        public var description: String { "\(variable) \(why)" }
    }

    /// W3C Baggage's percent-encoding, which the headers variable uses for values.
    private static func percentDecoded(_ text: String) -> String {
        var out: [UInt8] = []
        var bytes = Array(text.utf8)[...]
        while let byte = bytes.popFirst() {
            if byte == 0x25, bytes.count >= 2, let value = UInt8(String(decoding: bytes.prefix(2), as: UTF8.self), radix: 16) {
                out.append(value)
                bytes = bytes.dropFirst(2)
            } else {
                out.append(byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

extension StringProtocol {
    fileprivate func trimmingCharacters(in set: String) -> String {
        String(drop { set.contains($0) }.reversed().drop { set.contains($0) }.reversed())
    }
}
