import Testing
import Tracing
@testable import Telemetry

/// W3C trace context in and out, the samplers, the OpenTelemetry variables, and the OTLP
/// protobuf's wire bytes for the fields a collector reads first.
@Suite struct TraceContextTests {
    @Test func traceparentIsReadAndWrittenAsW3CSaysAndBadOnesAreRefused() {
        let header = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        let context = TraceContext(traceparent: header)
        #expect(context?.sampled == true && context?.traceparent == header)
        #expect(TraceContext(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")?.sampled == false)
        // A later version is read by its first four fields; ff, zero ids, upper case and bad lengths are not.
        #expect(TraceContext(traceparent: "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra") != nil)
        for bad in ["ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
                    "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
                    "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x", ""] {
            #expect(TraceContext(traceparent: bad) == nil, "\(bad)")
        }
    }

    @Test func samplersDecideByRatioAndFollowTheParent() {
        let ids = (0..<2_000).map { _ in ParleyTracer.randomID(16) }
        let kept = ids.filter { ParleyTracer.decide(.ratio(0.1), parent: nil, traceID: $0) }.count
        #expect((120...280).contains(kept), "\(kept) of 2000 at 10%")
        let sampledParent = TraceContext(traceID: ids[0], spanID: ParleyTracer.randomID(8), sampled: true)
        #expect(ParleyTracer.decide(.parentBased(root: .never), parent: sampledParent, traceID: ids[0]))
        #expect(!ParleyTracer.decide(.parentBased(root: .always), parent: TraceContext(traceID: ids[0], spanID: [1], sampled: false), traceID: ids[0]))
        #expect(ParleyTracer.decide(.ratio(1), parent: nil, traceID: [UInt8](repeating: 0xFF, count: 16)))
        #expect(!ParleyTracer.decide(.ratio(0), parent: nil, traceID: [UInt8](repeating: 0, count: 15) + [1]))
    }

    @Test func theVariablesAreReadAndABadOneNamed() throws {
        func read(_ values: [String: String]) -> Result<TraceSettings?, TraceSettings.Refusal> { TraceSettings.read { values[$0] } }
        #expect(try read([:]).get() == nil)
        let settings = try #require(try read(["OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/", "OTEL_SERVICE_NAME": "voice",
                                              "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.01",
                                              "OTEL_EXPORTER_OTLP_HEADERS": "x-key=abc%3D,tenant = blue"]).get())
        #expect(settings.endpoint == "http://collector:4318/v1/traces" && settings.serviceName == "voice")
        #expect(settings.sampler == .parentBased(root: .ratio(0.01)))
        #expect(settings.headers.map { "\($0.0)=\($0.1)" } == ["x-key=abc=", "tenant=blue"])
        #expect(try read(["OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"]).get() == nil)
        #expect(try read(["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/traces"]).get()?.endpoint == "http://c:4318/traces")
        guard case .failure(let refusal) = read(["OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_SAMPLER": "sometimes"]) else {
            Issue.record("an unknown sampler was taken"); return
        }
        #expect(refusal.variable == "OTEL_TRACES_SAMPLER")
        guard case .failure(let grpc) = read(["OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"]) else {
            Issue.record("grpc was taken"); return
        }
        #expect(grpc.variable == "OTEL_EXPORTER_OTLP_PROTOCOL")
    }

    @Test func protobufWritesVarintsFixed64AndNestedMessages() {
        var message = Protobuf()
        message.varint(6, 300)
        message.fixed64(7, 1)
        message.message(9) { $0.string(1, "k") }
        // 300 as a varint is AC 02; field 7 fixed64 is tag 0x39; field 9 length-delimited is 0x4A.
        #expect(message.bytes == [0x30, 0xAC, 0x02, 0x39, 1, 0, 0, 0, 0, 0, 0, 0, 0x4A, 3, 0x0A, 1, 0x6B])
    }
}
