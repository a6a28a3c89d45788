// metrics-compare: Parley's hand-written Prometheus writer against swift-prometheus 2.4.1, used
// directly and behind swift-metrics 2.13.0, on the cost of an observation and of a scrape after
// 100,000 simulated sessions. See FINDINGS.md.
//
//   metrics-compare [--sessions N] [--scrapes N] [--ops N] [--runs N] [--dump DIR]

import Synchronization

#if canImport(Glibc)
import Glibc
#endif

// MARK: Options

struct Options: Sendable {
    var sessions = 100_000
    var scrapes = 2_000
    var ops = 5_000_000
    var runs = 5
    var dumpDirectory: String?

    static func parse() -> Options {
        var o = Options()
        var args = CommandLine.arguments.dropFirst()
        while let arg = args.popFirst() {
            func value() -> String {
                guard let v = args.popFirst() else { fatalError("\(arg) needs a value") }
                return v
            }
            switch arg {
            case "--sessions": o.sessions = Int(value())!
            case "--scrapes": o.scrapes = Int(value())!
            case "--ops": o.ops = Int(value())!
            case "--runs": o.runs = Int(value())!
            case "--dump": o.dumpDirectory = value()
            case "-h", "--help":
                print("usage: metrics-compare [--sessions N (100000)] [--scrapes N (2000)] [--ops N (5000000)] [--runs N (5)] [--dump DIR]")
                exit(0)
            default: fatalError("unknown argument \(arg)")
            }
        }
        return o
    }
}
let options = Options.parse()
let threads = 2
let shape = Shape()

/// A side that does nothing but keep the values (in a per-loop slot, so that they are computed):
/// the simulation's own cost (random values, calls), subtracted from the others'.
final class NullSide: MetricsSide {
    let name = "(harness)"
    /// One slot per loop, 128 bytes apart.
    nonisolated(unsafe) let sink = UnsafeMutablePointer<UInt64>.allocate(capacity: 32)
    init() { sink.initialize(repeating: 0, count: 32) }
    deinit { sink.deallocate() }
    @inline(__always) func keep(_ loop: Int, _ x: UInt64) { sink[loop * 16] &+= x }
    func opened(loop: Int, endpoint: Int) { keep(loop, UInt64(endpoint)) }
    func audioFrame(loop: Int, bytes: Int, lagNanoseconds: UInt64, iterationNanoseconds: UInt64) {
        keep(loop, UInt64(bytes) &+ lagNanoseconds &+ iterationNanoseconds)
    }
    func speechStopped(loop: Int, recognitionRTF: Double, transcriptionNanoseconds: UInt64, toResponseNanoseconds: UInt64) {
        keep(loop, recognitionRTF.bitPattern &+ transcriptionNanoseconds &+ toResponseNanoseconds)
    }
    func responseCreated(loop: Int) { keep(loop, 1) }
    func firstToken(loop: Int, nanoseconds: UInt64) { keep(loop, nanoseconds) }
    func delta(loop: Int, bytes: Int, addedNanoseconds: UInt64, iterationNanoseconds: UInt64) {
        keep(loop, UInt64(bytes) &+ addedNanoseconds &+ iterationNanoseconds)
    }
    func replyAudio(loop: Int, synthesisRTF: Double, encodingRTF: Double, voiceToVoiceNanoseconds: UInt64) {
        keep(loop, synthesisRTF.bitPattern &+ encodingRTF.bitPattern &+ voiceToVoiceNanoseconds)
    }
    func responseDone(loop: Int, status: Int) { keep(loop, UInt64(status)) }
    func closed(loop: Int, endpoint: Int, code: Int) { keep(loop, UInt64(code)) }
    func scrape() -> String { String(sink[0] &+ sink[16]) }
    func counterAdd() {}
    func labelledCounterAdd() {}
    func histogramObserve(nanoseconds: UInt64) {}
}

/// For reference only, not Parley's code: a counter like Parley's Counter but with
/// Synchronization's wrappingAdd (one `lock xadd`) instead of add (which traps on overflow and so
/// compiles to a compare-and-swap loop).
final class WrappingCounter: Sendable {
    let value = Atomic<Int>(0)
    @inline(never) func add(_ n: Int) { _ = value.wrappingAdd(n, ordering: .relaxed) }
}

/// ns per call per thread of `ops` calls of `op` shared among `threads` threads.
@inline(never) func nsPerCall(_ o: Options, threads: Int, _ op: @escaping @Sendable () -> Void) -> Double {
    let perThread = o.ops / threads
    return Double(onThreads(threads) { _ in for _ in 0..<perThread { op() } }) / Double(perThread)
}

// MARK: Measurements

enum Micro: CaseIterable { case counter, labelled, histogram }

struct Scrape {
    var cpu: UInt64
    var wall: UInt64
    var allocations: Allocations
    var text: String
}

/// One side, its measurements callable one run at a time so that the sides can be measured in
/// turn (round-robin) and share whatever else the machine is doing.
protocol AnyContender: AnyObject {
    var name: String { get }
    func micro(_ kind: Micro, threads: Int, ops: Int) -> Double
    func simulateOnce(sessions: Int) -> Double
    func scrapeIdle() -> Scrape
    func scrapeAfterSessions() -> Scrape
}

final class Contender<S: MetricsSide>: AnyContender {
    let make: () -> S
    let microSide: S
    let idleSide: S
    var kept: S?
    var name: String { microSide.name }

    init(_ make: @escaping () -> S) {
        self.make = make
        microSide = make()
        idleSide = make()
    }

    /// ns per call, per thread, of `ops` calls shared among `threads` threads on one metric.
    @inline(never) func micro(_ kind: Micro, threads: Int, ops: Int) -> Double {
        let side = microSide
        let perThread = ops / threads
        let wall: UInt64
        switch kind {
        case .counter: wall = onThreads(threads) { _ in for _ in 0..<perThread { side.counterAdd() } }
        case .labelled: wall = onThreads(threads) { _ in for _ in 0..<perThread { side.labelledCounterAdd() } }
        case .histogram: wall = onThreads(threads) { _ in for i in 0..<perThread { side.histogramObserve(nanoseconds: values[i & 4095]) } }
        }
        return Double(wall) / Double(perThread)
    }

    /// Wall ms for `sessions` sessions on two threads (half each), on a new side that is kept.
    @inline(never) func simulateOnce(sessions: Int) -> Double {
        let side = make()
        let shape = Shape()
        let perLoop = sessions / 2
        let wall = onThreads(2) { loop in
            let start = loop * perLoop
            simulate(side, sessions: start..<(loop == 1 ? sessions : start + perLoop), loop: loop, shape: shape)
        }
        kept = side
        return Double(wall) / 1e6
    }

    @inline(never) func scrape(_ side: S) -> Scrape {
        let wall0 = now(), cpu0 = threadCPU()
        let (text, allocations) = counted { side.scrape() }
        let cpu1 = threadCPU(), wall1 = now()
        return Scrape(cpu: cpu1 - cpu0, wall: wall1 - wall0, allocations: allocations, text: text)
    }

    func scrapeIdle() -> Scrape { scrape(idleSide) }
    func scrapeAfterSessions() -> Scrape { scrape(kept!) }
}

struct Result {
    var micro: [String: [Double]] = [:]
    var simulation: [Double] = []
    var idleCPU: [Double] = []
    var cpu: [Double] = [], wall: [Double] = []
    var calls: [Double] = [], bytes: [Double] = []
    var output = ""
}

/// `body(contender index)` for every contender, `count` times, starting with a different one each
/// round.
func roundRobin(_ count: Int, _ n: Int, _ body: (Int) -> Void) {
    for round in 0..<count {
        for k in 0..<n { body((round + k) % n) }
    }
}

// MARK: Checking that the sides expose the same numbers

/// Samples by series key (name and labels, le as a number), HELP/TYPE lines skipped.
func samples(_ text: String) -> [String: Double] {
    var out: [String: Double] = [:]
    for line in text.split(separator: "\n") where !line.hasPrefix("#") {
        guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
        var key = String(line[..<space])
        if let open = key.firstIndex(of: "{") {
            // Labels in a fixed order (le last on every side), le's bound as a number.
            let labels = key[key.index(after: open)..<key.index(before: key.endIndex)].split(separator: ",").map { label -> String in
                guard label.hasPrefix("le=\"") else { return String(label) }
                let bound = label.dropFirst(4).dropLast()
                return "le=\"" + (Double(bound).map { "\($0)" } ?? String(bound)) + "\""
            }
            key = key[..<open] + "{" + labels.joined(separator: ",") + "}"
        }
        out[key] = value
    }
    return out
}

/// Differences between two expositions: missing series, and values that differ (sums of
/// histograms within 1%: Parley keeps whole microseconds).
func differences(_ a: String, _ b: String) -> [String] {
    let x = samples(a), y = samples(b)
    var diffs: [String] = []
    for key in Set(x.keys).union(y.keys).sorted() {
        guard let u = x[key], let v = y[key] else { diffs.append("\(key): only on one side"); continue }
        let tolerance = key.hasSuffix("_sum") ? 0.01 * max(abs(u), abs(v)) : 1e-9 * max(1, abs(u))
        if abs(u - v) > tolerance { diffs.append("\(key): \(u) vs \(v)") }
    }
    return diffs
}

// MARK: Run

func fmt(_ x: Double, _ digits: Int = 1) -> String {
    var s = String(Int((x * pow(10, Double(digits))).rounded()))
    if digits > 0 {
        while s.count <= digits { s = "0" + s }
        s.insert(".", at: s.index(s.endIndex, offsetBy: -digits))
    }
    return s
}

func grouped(_ n: Int) -> String {
    var s = String(n)
    var i = s.count - 3
    while i > 0 { s.insert(",", at: s.index(s.startIndex, offsetBy: i)); i -= 3 }
    return s
}

let cores = sysconf(Int32(_SC_NPROCESSORS_ONLN))
var load = [Double](repeating: 0, count: 3)
getloadavg(&load, 3)
print("metrics-compare: \(grouped(options.sessions)) sessions on \(threads) threads, \(shape.counterOps) counter adds + \(shape.histogramOps) histogram observations per session")
print("(\(shape.turns) turns of \(shape.framesPerTurn) audio frames and \(shape.deltasPerTurn) deltas); ns/op medians of \(options.runs) runs of \(grouped(options.ops)) ops; scrapes: median of \(grouped(options.scrapes)).")
print("")

let contenders: [any AnyContender] = [
    Contender { ParleySide() }, Contender { PrometheusSide() }, Contender { SwiftMetricsSide() },
]
let harness = Contender { NullSide() }
var results = contenders.map { _ in Result() }
let o = options

// Warm-up: every code path once, and the registries' internal buffers sized.
for c in contenders {
    for kind in Micro.allCases { _ = c.micro(kind, threads: 1, ops: 100_000) }
    for _ in 0..<50 { _ = c.scrapeIdle() }
}

// (a) Single operations.
roundRobin(o.runs, contenders.count) { i in
    for kind in Micro.allCases {
        for t in kind == .labelled ? [1] : [1, 2] {
            results[i].micro["\(kind)\(t)", default: []].append(contenders[i].micro(kind, threads: t, ops: o.ops))
        }
    }
}

// The sessions, and the harness alone.
var harnessRuns: [Double] = []
roundRobin(max(3, o.runs / 2), contenders.count + 1) { i in
    if i == contenders.count { harnessRuns.append(harness.simulateOnce(sessions: o.sessions)) }
    else { results[i].simulation.append(contenders[i].simulateOnce(sessions: o.sessions)) }
}
let harnessMilliseconds = median(harnessRuns)

// (b) Scrapes, before any session and after the sessions.
roundRobin(o.scrapes / 4, contenders.count) { i in
    results[i].idleCPU.append(Double(contenders[i].scrapeIdle().cpu) / 1e3)
}
for c in contenders { for _ in 0..<20 { _ = c.scrapeAfterSessions() } }
roundRobin(o.scrapes, contenders.count) { i in
    let s = contenders[i].scrapeAfterSessions()
    results[i].cpu.append(Double(s.cpu) / 1e3)
    results[i].wall.append(Double(s.wall) / 1e3)
    results[i].calls.append(Double(s.allocations.calls))
    results[i].bytes.append(Double(s.allocations.bytes))
    results[i].output = s.text
}

var loadAfter = [Double](repeating: 0, count: 3)
getloadavg(&loadAfter, 3)

let operations = Double(o.sessions * (shape.counterOps + shape.histogramOps))
@MainActor func perOperation(_ r: Result) -> Double { max(0, median(r.simulation) - harnessMilliseconds) * 1e6 * 2 / operations }

func lineCount(_ text: String) -> Int { text.split(separator: "\n").count }
@MainActor func row(_ title: String, _ cell: (Result) -> String) {
    print("| \(title) | " + results.map(cell).joined(separator: " | ") + " |")
}
func m(_ key: String) -> (Result) -> String { { fmt(median($0.micro[key] ?? [])) } }
print("| | " + contenders.map(\.name).joined(separator: " | ") + " |")
print("|---|" + contenders.map { _ in "---:" }.joined(separator: "|") + "|")
row("counter add, 1 thread (ns)", m("counter1"))
row("counter add, 2 threads on one counter (ns)", m("counter2"))
row("labelled counter add, 1 thread (ns)", m("labelled1"))
row("histogram observe, 1 thread (ns)", m("histogram1"))
row("histogram observe, 2 threads on one histogram (ns)", m("histogram2"))
row("\(grouped(o.sessions)) sessions on 2 threads, wall (ms)") { fmt(median($0.simulation), 0) }
row("… per metric operation, harness subtracted (ns)") { fmt(perOperation($0)) }
row("scrape before any session, CPU median (µs)") { fmt(median($0.idleCPU)) }
row("scrape after the sessions, CPU median (µs)") { fmt(median($0.cpu)) }
row("scrape after the sessions, wall median / p90 (µs)") { "\(fmt(median($0.wall))) / \(fmt(percentile($0.wall, 0.9)))" }
row("allocations per scrape (count / bytes)") { "\(Int(median($0.calls))) / \(grouped(Int(median($0.bytes))))" }
row("output (bytes / lines)") { "\(grouped($0.output.utf8.count)) / \(lineCount($0.output))" }
print("")
print("harness alone (random values and calls, no metrics): \(fmt(harnessMilliseconds, 0)) ms for the same sessions; \(shape.counterOps + shape.histogramOps) metric operations per session.")
let wrapping = WrappingCounter()
let wrapping1 = median((0..<o.runs).map { _ in nsPerCall(o, threads: 1) { wrapping.add(1) } })
let wrapping2 = median((0..<o.runs).map { _ in nsPerCall(o, threads: 2) { wrapping.add(1) } })
print("for reference, Parley's Counter with wrappingAdd instead of add (not Parley's code): \(fmt(wrapping1)) ns on 1 thread, \(fmt(wrapping2)) ns with 2 threads on one counter.")

let parley = results[0].output
for (c, r) in zip(contenders, results).dropFirst() {
    let name = c.name
    let d = differences(parley, r.output)
    print("same samples as Parley's (\(samples(parley).count) series): \(name): \(d.isEmpty ? "yes" : "\(d.count) differ, e.g. \(d.prefix(3).joined(separator: "; "))")")
}
print("")
print("command: \(CommandLine.arguments.joined(separator: " "))")
print("nproc: \(cores); load average before \(fmt(load[0], 2)), after \(fmt(loadAfter[0], 2)). Other processes (builds) may share these cores: times are indicative, compare columns within one run.")

if let dir = options.dumpDirectory {
    for (i, r) in results.enumerated() {
        let path = "\(dir)/metrics-\(["parley", "prometheus", "swift-metrics"][i]).txt"
        if let f = fopen(path, "w") {
            fputs(r.output, f)
            fclose(f)
        }
    }
    print("expositions written to \(dir)/metrics-*.txt")
}
