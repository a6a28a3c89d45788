// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "Parley",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "parley", targets: ["parley"]),
        .executable(name: "parley-load", targets: ["parley-load"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        // Latency histograms in the load harness (HdrHistogram's Swift port).
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
        // The Swift server ecosystem's logging API; Parley's handler (logfmt or JSON on stderr) is the executable's.
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // The ecosystem's tracing API; Parley's tracer and its OTLP exporter are its own (Telemetry).
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
    ],
    targets: [
        // C at the edges: Linux syscalls Glibc does not export, libopus, OpenSSL, speech, SQLite.
        .target(name: "CLinux", path: "Sources/CLinux"),
        .systemLibrary(
            name: "COpus", path: "Sources/COpus", pkgConfig: "opus",
            providers: [.apt(["libopus-dev"])]),
        .systemLibrary(
            name: "CSpeexDSP", path: "Sources/CSpeexDSP", pkgConfig: "speexdsp",
            providers: [.apt(["libspeexdsp-dev"])]),
        // The speech libraries, opened with dlopen when first used rather than linked (their
        // dependency trees cost every server about 2.5 MB resident at start): C targets holding the
        // loader and trampolines, compiled against libespeak-ng-dev's and libsphinxbase-dev's
        // headers (scripts/tools/install-deps.sh); no -l flags.
        .target(name: "CPocketSphinx", path: "Sources/CPocketSphinx"),
        .target(name: "CEspeak", path: "Sources/CEspeak"),
        // OpenSSL's headers only, no -l flags (no pkgConfig, whose flags link it): CTLS opens
        // libssl.so.3 with dlopen when it is first needed (Sources/CTLS/OpenSSLLibrary.c).
        .systemLibrary(
            name: "COpenSSL", path: "Sources/COpenSSL",
            providers: [.apt(["libssl-dev"])]),
        .systemLibrary(
            name: "CSQLite", path: "Sources/CSQLite", pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(
            // No pkgConfig: hiredis's .pc adds -D_FILE_OFFSET_BITS=64, which SwiftPM warns about on
            // every build; its headers are in /usr/include and the module map links it.
            name: "CHiredis", path: "Sources/CHiredis",
            providers: [.apt(["libhiredis-dev"])]),

        // libsrtp2: SRTP and SRTCP protection of WebRTC's and SIP's media (RFC 3711), functions on
        // buffers with no thread of their own, wrapped by TLS's SRTPContext. Its header only, no -l
        // flags: CSRTP opens libsrtp2.so.1 with dlopen when a call first needs it
        // (Sources/CSRTP/SRTPLibrary.c), since Debian's is built on NSS and linked it mapped five NSS
        // libraries into every server.
        .target(name: "CSRTP", path: "Sources/CSRTP"),

        // ONNX Runtime's C API (Silero VAD, one model a loop): its header's few declarations only,
        // no -l flags; CONNXRuntime opens the onnxruntime wheel's libonnxruntime.so with dlopen
        // when the first stream needs it (Sources/CONNXRuntime/ONNXRuntimeLibrary.c).
        .target(name: "CONNXRuntime", path: "Sources/CONNXRuntime"),

        // The browser page's files (page/: HTML, JS, CSS), compiled into `parley` with C23's #embed
        // and served from memory (Sources/parley/ClientPage.swift): nothing to install beside the
        // executable, wherever it runs from.
        .target(name: "CClientPage", path: "Sources/CClientPage", exclude: ["page"]),

        // OpenSSL's loading, macros, callbacks and allocator hooks, which Swift cannot reach directly.
        .target(name: "CTLS", dependencies: ["COpenSSL"], path: "Sources/CTLS"),

        // The layers (docs/architecture.md; scripts/tools/check-layers.sh fails on an import going the
        // wrong way). Metrics, JSON and Codec stand alone.
        // Counters, histograms and the one Prometheus text writer.
        .target(name: "Metrics"),
        // The event loops (ae-shaped: descriptors, callbacks, timers), Sys, worker pools, clock, threads.
        .target(name: "Loop", dependencies: ["CLinux", "Metrics"]),
        // OpenSSL behind one wrapper: contexts and non-blocking TLS streams, for serving and upstreams;
        // DTLS; and SRTP over libsrtp2 (CSRTP), keyed by WebRTC's DTLS or SIP's SDES.
        .target(name: "TLS", dependencies: ["Loop", "COpenSSL", "CTLS", "CSRTP"]),
        // The HTTP/1.1 client on the loops: pool, TLS, response and server-sent-event parsers.
        .target(name: "Upstream", dependencies: ["Loop", "TLS", .product(name: "Logging", package: "swift-log")]),
        // Serving: HTTP/1.1, WebSocket (RFC 6455), TLS, routing, metrics exposition.
        .target(name: "Server", dependencies: ["Loop", "TLS", "Metrics", "JSON", "CLinux", .product(name: "Logging", package: "swift-log")]),
        .target(name: "Codec", dependencies: ["COpus", "CSpeexDSP"]),
        // JSON values, a strict parser for untrusted input and a writer; no Foundation.
        .target(name: "JSON"),
        // Where conversations outlive their process: the ConversationStore protocol, and SQLite (one
        // node) and Redis (hiredis's async client on the loops, many nodes) behind it.
        .target(name: "Store", dependencies: ["Loop", "Metrics", "CSQLite", "CHiredis", .product(name: "Logging", package: "swift-log")]),
        // MCP servers as the session's tools: the client, its messages and its cache.
        .target(name: "MCP", dependencies: ["Upstream", "Loop", "JSON", .product(name: "Logging", package: "swift-log")]),
        // The models a session talks to: LanguageModel and its providers (OpenAI-compatible,
        // Anthropic, the built-in agent), chat messages, tools, usage, and the upstream metrics.
        .target(name: "Models", dependencies: ["Upstream", "Loop", "Metrics", "JSON", .product(name: "Logging", package: "swift-log")]),
        // What a session asks of speech (a recogniser, a voice, a VAD, an end-of-turn model), the
        // speech helper's protocol table and the speech metrics: the contracts Speech implements.
        .target(name: "SpeechContracts", dependencies: ["Models", "Loop", "Metrics", "JSON"]),
        // Traces: swift-distributed-tracing's Tracer, W3C trace context, OTLP/HTTP export over Upstream's client.
        .target(name: "Telemetry", dependencies: ["Loop", "Metrics", "Upstream", .product(name: "Tracing", package: "swift-distributed-tracing")]),
        // Who may connect and what each may spend: API keys, JWTs, client secrets, tenants.
        .target(name: "Access", dependencies: ["Server", "Store", "TLS", "Loop", "Metrics", "JSON", .product(name: "Logging", package: "swift-log")]),
        // The session engine and its protocols (the Realtime API's, with its dialects, and GPT-Live's),
        // turn-taking and VAD: values, events in and actions out, no loop, no socket, no store; a
        // target of their own so that the compiler holds them to it.
        .target(name: "SessionEngine", dependencies: ["Models", "SpeechContracts", "MCP", "Codec", "JSON"]),
        // The runtime over the engine: the session driver, the seam every carrier meets, the
        // Realtime and GPT-Live endpoints and handlers, call control, recordings, reports and resume.
        .target(name: "Session", dependencies: ["SessionEngine", "MCP", "Models", "SpeechContracts", "Access", "Store", "Telemetry", .product(name: "Tracing", package: "swift-distributed-tracing"), "Server", "TLS", "Loop", "Metrics", "Codec", "JSON", .product(name: "Logging", package: "swift-log")]),
        // What WebRTC and SIP share, as values: RTP and RTCP packets, the jitter buffer, SDP.
        .target(name: "Media", dependencies: ["Loop"]),
        // WebRTC on the loops: ICE-lite and STUN, DTLS-SRTP, the oai-events data channel (SCTP and
        // DCEP), and /v1/realtime/calls, onto the same session driver.
        .target(name: "WebRTC", dependencies: ["SessionEngine", "Media", "Session", "Access", "Server", "TLS", "Loop", "Metrics", "JSON", .product(name: "Logging", package: "swift-log")]),
        // SIP as values: messages, URIs, the stream framer, RFC 3261's transactions and digest
        // authentication (OpenSSL's MD5 and SHA-256 through TLS). No sockets (Loop for HeapSize only).
        .target(name: "SIP", dependencies: ["Media", "TLS", "Loop", "JSON"]),
        // Carrier media streams (Twilio's /twilio) and SIP calls in and out (the SIP endpoint, its
        // user agent and trunks, SIP over TCP and TLS on Server's connections), on the same session driver.
        .target(name: "Telephony", dependencies: ["SessionEngine", "SIP", "Media", "Upstream", "Session", "Access", "Server", "TLS", "Loop", "Metrics", "Codec", "JSON", .product(name: "Logging", package: "swift-log")]),
        // The speech providers: Silero VAD in process (ONNX Runtime), pocketsphinx and espeak-ng
        // embedded, the speech helper's Whisper, Piper and Smart Turn over its socket, and
        // OpenAI-compatible ones over HTTP.
        .target(name: "Speech", dependencies: ["Models", "SpeechContracts", "Upstream", "Loop", "Codec", "JSON", "CPocketSphinx", "CEspeak", "CONNXRuntime"]),
        // The OpenAI/Anthropic-compatible test server behind `parley mock-llm`.
        .target(name: "MockLLM", dependencies: ["Server", "Models", "Loop", "Codec", "JSON"]),
        .executableTarget(
            name: "parley",
            dependencies: ["SessionEngine", 
                "Server", "Session", "Telephony", "WebRTC", "Access", "Models", "SpeechContracts", "MCP", "Speech", "MockLLM", "Store", "Upstream", "TLS", "Loop", "Metrics", "Codec", "JSON", "CLinux",
                "CClientPage", "Telemetry", .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // The plain-C libopus loop that `parley-load codec` measures the Swift wrapper against.
        .target(name: "CCodecBench", dependencies: ["COpus"], path: "LoadTests/CCodecBench"),
        .executableTarget(
            name: "parley-load",
            dependencies: ["SessionEngine", 
                "Server", "Loop", "TLS", "CLinux", "Codec", "CCodecBench", "JSON", "Session", "Speech", "Models", "WebRTC", "Media", "SIP",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ],
            path: "LoadTests/parley-load"),

        // Real-socket clients and servers shared by the test targets.
        .target(name: "TestSupport", dependencies: ["Server", "Loop", "JSON", "Codec"], path: "Tests/TestSupport"),
        .testTarget(name: "LoopTests", dependencies: ["Loop"]),
        .testTarget(name: "MetricsTests", dependencies: ["Metrics"]),
        .testTarget(name: "TLSTests", dependencies: ["TLS", "Loop", "TestSupport"]),
        .testTarget(name: "UpstreamTests", dependencies: ["Upstream", "Server", "Loop", "TLS", "TestSupport"]),
        .testTarget(name: "ServerTests", dependencies: ["Server", "Loop", "TLS", "TestSupport"]),
        .testTarget(name: "MCPTests", dependencies: ["MCP", "JSON", "Loop", "Server", "TestSupport", .product(name: "Logging", package: "swift-log")]),
        // The providers against `parley mock-llm`'s routes over real sockets, hence MockLLM and Server.
        .testTarget(name: "ModelsTests", dependencies: ["SpeechContracts", "Models", "JSON", "Loop", "Metrics", "Upstream", "Server", "MockLLM", "TestSupport"]),
        .testTarget(name: "MockLLMTests", dependencies: ["MockLLM", "Models", "Server", "Loop", "JSON", "TestSupport"]),
        .testTarget(name: "TelemetryTests", dependencies: ["Telemetry", .product(name: "Tracing", package: "swift-distributed-tracing")]),
        .testTarget(name: "AccessTests", dependencies: ["Access", "Store", "JSON", "Loop", "TLS", "TestSupport"]),
        .testTarget(name: "SessionTests", dependencies: ["SessionEngine", "SpeechContracts", "MCP", "Session", "Models", "Access", "MockLLM", "Server", "Upstream", "Loop", "Metrics", "Codec", "JSON", "TestSupport"]),
        .testTarget(name: "TelephonyTests", dependencies: ["SpeechContracts", "Telephony", "SIP", "Media", "Session", "Server", "Loop", "Speech", "Models", "Codec", "JSON", "TestSupport"]),
        .testTarget(name: "SpeechTests", dependencies: ["SessionEngine", "SpeechContracts", "Speech", "Session", "Models", "MockLLM", "Server", "Upstream", "Loop", "Codec", "TestSupport"]),
        .testTarget(name: "JSONTests", dependencies: ["JSON"]),
        .testTarget(name: "MediaTests", dependencies: ["Media"]),
        .testTarget(name: "SIPTests", dependencies: ["SIP", "Media"], exclude: ["Fixtures"]),
        .testTarget(name: "WebRTCTests", dependencies: ["WebRTC", "Media", "Session", "Server", "TLS", "Loop", "TestSupport"]),
        .testTarget(name: "CodecTests", dependencies: ["Codec", "TestSupport"]),
        // Runs the built `parley` executable as a child process.
        .testTarget(name: "ParleyTests", dependencies: ["SpeechContracts", "parley", "Server", "Loop", "TLS", "JSON", "Codec", "Speech", "Models", "TestSupport", .product(name: "Logging", package: "swift-log")]),
        // A child that writes through SQLiteConversationStore until it is killed, for the kill -9 test.
        .executableTarget(name: "store-writer", dependencies: ["Store", "Loop"], path: "Tests/StoreWriter"),
        .testTarget(name: "StoreTests", dependencies: ["Store", "store-writer", "Loop", "TestSupport"]),
        // Against a real redis-server each test starts on a free port (scripts/tools/install-deps.sh installs it).
        .testTarget(name: "RedisTests", dependencies: ["Store", "Loop", "TestSupport"]),
        .testTarget(name: "ParleyLoadTests", dependencies: ["parley-load", "Loop", "Metrics", "TLS", "SIP", "Media"]),
    ],
    swiftLanguageModes: [.v6]
)

// The libFuzzer targets (Fuzz/, `make fuzz-deep`): declared only when PARLEY_FUZZ is set. The binary
// has no `main` of its own (libFuzzer's links in with -sanitize=fuzzer), so a plain `swift build` must
// not see it; gated here, it costs `swift build` and `make test` nothing. It reaches the parsers'
// internals with `@testable import`, so it is built with -enable-testing (scripts/tools/libfuzzer.sh).
if Context.environment["PARLEY_FUZZ"] != nil {
    package.targets.append(.executableTarget(
        name: "parley-fuzz",
        dependencies: ["SessionEngine", "Server", "Session", "Access", "Telephony", "Media", "SIP", "WebRTC", "MCP", "Codec", "JSON", "Loop", "TLS", "TestSupport"],
        path: "Fuzz/Sources"))
}
