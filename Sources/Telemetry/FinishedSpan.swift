/// A span as it is exported: everything OTLP carries of it, fixed once it has ended.
struct FinishedSpan: Sendable {
    /// OTLP's Span.SpanKind.
    enum Kind: Int, Sendable { case `internal` = 1, server = 2, client = 3, producer = 4, consumer = 5 }
    /// OTLP's Status.StatusCode.
    enum Status: Int, Sendable { case unset = 0, ok = 1, error = 2 }

    struct Event: Sendable {
        var name: String
        var nanoseconds: UInt64
        var attributes: [(String, SpanValue)]
    }

    var context: TraceContext
    var parentSpanID: [UInt8]?
    var name: String
    var kind: Kind
    var startNanoseconds: UInt64
    var endNanoseconds: UInt64
    var attributes: [(String, SpanValue)]
    var events: [Event]
    var status: Status
    var statusMessage: String
}

/// An attribute's value, as OTLP's AnyValue holds the scalar ones.
enum SpanValue: Sendable, Equatable {
    case string(String)
    case bool(Bool)
    case int(Int64)
    case double(Double)
}
