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
    ],
    targets: [
        // C at the edges: Linux syscalls Glibc does not export, libopus, OpenSSL.
        .target(name: "CLinux", path: "Sources/CLinux"),
        .systemLibrary(
            name: "COpus", path: "Sources/COpus", pkgConfig: "opus",
            providers: [.apt(["libopus-dev"])]),
        .systemLibrary(
            name: "CSpeexDSP", path: "Sources/CSpeexDSP", pkgConfig: "speexdsp",
            providers: [.apt(["libspeexdsp-dev"])]),
        .systemLibrary(
            name: "CPocketSphinx", path: "Sources/CPocketSphinx", pkgConfig: "pocketsphinx",
            providers: [.apt(["libpocketsphinx-dev", "pocketsphinx-en-us"])]),
        .systemLibrary(
            name: "CEspeak", path: "Sources/CEspeak", pkgConfig: "espeak-ng",
            providers: [.apt(["libespeak-ng-dev"])]),
        .systemLibrary(
            name: "COpenSSL", path: "Sources/COpenSSL", pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]),

        // OpenSSL's macros, callbacks and allocator hooks, which Swift cannot reach directly.
        .target(name: "CTLS", dependencies: ["COpenSSL"], path: "Sources/CTLS"),
        .target(name: "Server", dependencies: ["CLinux", "COpenSSL", "CTLS"]),
        .target(name: "Codec", dependencies: ["COpus", "CSpeexDSP"]),
        // JSON values, a strict parser for untrusted input and a writer; no Foundation.
        .target(name: "JSON"),
        .target(name: "Session", dependencies: ["Server", "Codec", "JSON"]),
        // The speech providers: pocketsphinx and espeak-ng embedded, OpenAI-compatible over HTTP.
        .target(name: "Speech", dependencies: ["Session", "Server", "Codec", "JSON", "CPocketSphinx", "CEspeak"]),
        .executableTarget(
            name: "parley",
            dependencies: [
                "Server", "Session", "Speech", "Codec", "CLinux",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),
        // The plain-C libopus loop that `parley-load codec` measures the Swift wrapper against.
        .target(name: "CCodecBench", dependencies: ["COpus"], path: "LoadTests/CCodecBench"),
        .executableTarget(
            name: "parley-load",
            dependencies: [
                "Server", "CLinux", "Codec", "CCodecBench", "JSON",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ],
            path: "LoadTests/parley-load"),

        // Real-socket clients and servers shared by the test targets.
        .target(name: "TestSupport", dependencies: ["Server", "JSON"], path: "Tests/TestSupport"),
        .testTarget(name: "ServerTests", dependencies: ["Server", "TestSupport"]),
        .testTarget(name: "SessionTests", dependencies: ["Session", "Server", "Codec", "JSON", "TestSupport"]),
        .testTarget(name: "SpeechTests", dependencies: ["Speech", "Session", "Server", "Codec", "TestSupport"]),
        .testTarget(name: "JSONTests", dependencies: ["JSON"]),
        .testTarget(name: "CodecTests", dependencies: ["Codec", "TestSupport"]),
        // Runs the built `parley` executable as a child process.
        .testTarget(name: "ParleyTests", dependencies: ["parley", "Server", "JSON", "TestSupport"]),
        .testTarget(name: "ParleyLoadTests", dependencies: ["parley-load", "Server"]),
    ],
    swiftLanguageModes: [.v6]
)
