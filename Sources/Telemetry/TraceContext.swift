import Tracing

/// Where a span sits in a trace, as W3C Trace Context's `traceparent` carries it
/// (https://www.w3.org/TR/trace-context/, section 3.2): a 16-byte trace id, the 8-byte id of the
/// span, and whether the trace is sampled (the `01` flag).
public struct TraceContext: Sendable, Equatable {
    public var traceID: [UInt8]
    public var spanID: [UInt8]
    public var sampled: Bool

    public init(traceID: [UInt8], spanID: [UInt8], sampled: Bool) {
        self.traceID = traceID
        self.spanID = spanID
        self.sampled = sampled
    }

    /// `00-<32 hex>-<16 hex>-<2 hex>`: version 00, or a later one read as 00 (section 3.2.4: "parse
    /// the first four fields"); all-zero ids, a bad length or non-hex digits are refused (nil), as
    /// is version ff.
    public init?(traceparent: some StringProtocol) {
        let parts = traceparent.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count >= 4, parts[0].count == 2, parts[0] != "ff", parts[0] == "00" ? parts.count == 4 : true,
              let trace = Self.bytes(parts[1], count: 16), let span = Self.bytes(parts[2], count: 8),
              let flags = Self.bytes(parts[3], count: 1), Self.bytes(parts[0], count: 1) != nil,
              trace.contains(where: { $0 != 0 }), span.contains(where: { $0 != 0 }) else { return nil }
        self.init(traceID: trace, spanID: span, sampled: flags[0] & 1 == 1)
    }

    public var traceparent: String {
        "00-\(Self.hex(traceID))-\(Self.hex(spanID))-\(sampled ? "01" : "00")"
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes { out += [digits[Int(byte >> 4)], digits[Int(byte & 15)]] }
        return String(decoding: out, as: UTF8.self)
    }

    private static func bytes(_ text: some StringProtocol, count: Int) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count == count * 2 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(count)
        for index in stride(from: 0, to: utf8.count, by: 2) {
            guard let high = nibble(utf8[index]), let low = nibble(utf8[index + 1]) else { return nil }
            out.append(high << 4 | low)
        }
        return out
    }

    /// Lower-case hex only, as the specification writes it (section 3.2.2.3).
    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: c - 0x30
        case 0x61...0x66: c - 0x61 + 10
        default: nil
        }
    }
}

/// The key under which a `TraceContext` rides in swift-distributed-tracing's context.
public enum TraceContextKey: InstrumentationContextKey {
    public typealias Value = TraceContext
}

extension InstrumentationContext {
    /// The span this context names, if any.
    public var trace: TraceContext? {
        get { self[TraceContextKey.self] }
        set { self[TraceContextKey.self] = newValue }
    }
}
