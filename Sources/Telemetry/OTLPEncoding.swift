/// OTLP's trace export request in protobuf (opentelemetry/proto/collector/trace/v1 and
/// trace/v1/trace.proto), written by hand: a handful of messages, fields by number, so no
/// generated code and no protobuf runtime. Encoding rules from protobuf's "Encoding" guide:
/// varint tags `field << 3 | wire type`, length-delimited messages and strings (2), fixed64 (1).
enum OTLPEncoding {
    /// ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }, with one
    /// resource (`service.name` and the rest of `resource`) and one scope (`parley`).
    static func request(spans: [FinishedSpan], resource: [(String, SpanValue)], scopeVersion: String) -> [UInt8] {
        var scope = Protobuf()
        scope.message(1) { $0.string(1, "parley"); $0.string(2, scopeVersion) }  // InstrumentationScope
        for span in spans { scope.message(2) { encode(span, into: &$0) } }
        var resourceSpans = Protobuf()
        resourceSpans.message(1) { message in  // Resource { repeated KeyValue attributes = 1; }
            for (key, value) in resource { message.message(1) { keyValue(key, value, into: &$0) } }
        }
        resourceSpans.message(2, scope.bytes)  // ScopeSpans
        var request = Protobuf()
        request.message(1, resourceSpans.bytes)
        return request.bytes
    }

    /// Span: trace_id 1, span_id 2, parent_span_id 4, name 5, kind 6, start 7 and end 8
    /// (fixed64 ns since the epoch), attributes 9, events 11, status 15.
    private static func encode(_ span: FinishedSpan, into out: inout Protobuf) {
        out.bytes(1, span.context.traceID)
        out.bytes(2, span.context.spanID)
        if let parent = span.parentSpanID { out.bytes(4, parent) }
        out.string(5, span.name)
        out.varint(6, UInt64(span.kind.rawValue))
        out.fixed64(7, span.startNanoseconds)
        out.fixed64(8, span.endNanoseconds)
        for (key, value) in span.attributes { out.message(9) { keyValue(key, value, into: &$0) } }
        for event in span.events {
            out.message(11) { message in  // Event { time 1 (fixed64); name 2; attributes 3 }
                message.fixed64(1, event.nanoseconds)
                message.string(2, event.name)
                for (key, value) in event.attributes { message.message(3) { keyValue(key, value, into: &$0) } }
            }
        }
        if span.status != .unset {
            out.message(15) { message in  // Status { message 2; code 3 }
                if !span.statusMessage.isEmpty { message.string(2, span.statusMessage) }
                message.varint(3, UInt64(span.status.rawValue))
            }
        }
    }

    /// KeyValue { key 1; AnyValue value 2 }, AnyValue { string 1 | bool 2 | int 3 | double 4 }.
    private static func keyValue(_ key: String, _ value: SpanValue, into out: inout Protobuf) {
        out.string(1, key)
        out.message(2) { any in
            switch value {
            case .string(let text): any.string(1, text)
            case .bool(let flag): any.varint(2, flag ? 1 : 0)
            case .int(let number): any.varint(3, UInt64(bitPattern: number))
            case .double(let number): any.fixed64(4, number.bitPattern)
            }
        }
    }
}

/// A protobuf message being written.
struct Protobuf {
    private(set) var bytes: [UInt8] = []

    private mutating func tag(_ field: Int, _ wireType: UInt64) { writeVarint(UInt64(field) << 3 | wireType) }

    private mutating func writeVarint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(value & 0x7F) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    mutating func varint(_ field: Int, _ value: UInt64) {
        tag(field, 0)
        writeVarint(value)
    }

    mutating func fixed64(_ field: Int, _ value: UInt64) {
        tag(field, 1)
        for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }

    mutating func bytes(_ field: Int, _ value: [UInt8]) {
        tag(field, 2)
        writeVarint(UInt64(value.count))
        bytes += value
    }

    mutating func string(_ field: Int, _ value: String) { bytes(field, Array(value.utf8)) }

    mutating func message(_ field: Int, _ value: [UInt8]) { bytes(field, value) }

    mutating func message(_ field: Int, _ write: (inout Protobuf) -> Void) {
        var inner = Protobuf()
        write(&inner)
        bytes(field, inner.bytes)
    }
}
