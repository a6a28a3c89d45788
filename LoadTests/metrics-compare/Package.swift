// swift-tools-version: 6.0
// Parley's hand-written Prometheus writer against swift-prometheus (directly, and behind
// swift-metrics) on observation and scrape cost: see FINDINGS.md. A package of its own so that
// Parley's build graph never pulls these dependencies in.
import PackageDescription

let package = Package(
    name: "metrics-compare",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ],
    targets: [
        // Parley's own `Metrics` target, compiled from its sources through the committed symlink
        // ParleySources -> ../../Sources/Metrics: a package dependency can only use products, and
        // Parley's package has no library product for Metrics. Named ParleyMetrics because SwiftPM
        // refuses two targets named `Metrics` (swift-metrics has one) in one package graph.
        .target(name: "ParleyMetrics", path: "ParleySources"),
        // Counts malloc calls and bytes on the calling thread while switched on (glibc's __libc_*).
        .target(name: "CAllocCount", path: "Sources/CAllocCount"),
        .executableTarget(
            name: "metrics-compare",
            dependencies: [
                "ParleyMetrics", "CAllocCount",
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            path: "Sources/metrics-compare"),
    ],
    swiftLanguageModes: [.v6]
)
