import ArgumentParser
import JSON
import Loop
#if canImport(Glibc)
import Glibc
#endif

/// `parley-load sip-ramp`: how many SIP calls a second the server takes, step by step.
struct SIPRampCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sip-ramp",
        abstract: "Place SIP calls at rising rates (INVITE, 200, ACK, BYE at once, 200), a step each; how many a second the server accepts, their set-up time, and its CPU per call.",
        discussion: """
            Each step places calls at its rate for --step-seconds from a pool of --sockets UDP sockets \
            (the callers' addresses; the server's loops are chosen by them), waits for every call to end \
            (or be given up after --answer-timeout), and reports the INVITEs sent, the 200s, the other \
            final responses by status, set-up (INVITE → 200) p50 / p99, and the server's CPU per call \
            accepted (--server-pid). The ramp stops after the first step in which fewer than --stop-below \
            of the INVITEs were accepted. Every step and the whole run are bounded.
            """)

    @Option(help: "Calls placed a second at each step, comma-separated.")
    var rates = "50,100,200,400,800,1600"

    @Option(help: "Seconds each step places calls.")
    var stepSeconds = 5.0

    @Option(help: "The server's SIP port on 127.0.0.1 (UDP).")
    var sipPort: UInt16 = 5060

    @Option(help: "UDP sockets the calls come from.")
    var sockets = 64

    @Option(help: "Seconds an INVITE waits for its final response (resent on timer A meanwhile).")
    var answerTimeout = 4.0

    @Option(help: "Stop after a step in which fewer than this share of the INVITEs were accepted.")
    var stopBelow = 0.9

    @Option(help: "The server's process id, for its CPU from /proc.")
    var serverPid: Int32?

    @Option(help: "Also write the summary as JSON to this file.")
    var json: String?

    var rateList: [Double] { rates.split(separator: ",").compactMap { Double($0.filter { $0 != " " }) } }

    func validate() throws {
        let list = rateList
        guard !list.isEmpty, list.count <= 20, list.count == rates.split(separator: ",").count, list.allSatisfy({ $0 > 0 && $0 <= 10_000 }) else {
            throw ValidationError("--rates is 1 to 20 rates, each (0, 10000] calls a second")
        }
        guard stepSeconds > 0, stepSeconds <= 60, (1...1000).contains(sockets), answerTimeout > 0, answerTimeout <= 32, (0...1).contains(stopBelow) else {
            throw ValidationError("--step-seconds (0, 60], --sockets 1...1000, --answer-timeout (0, 32], --stop-below 0...1")
        }
    }

    func run() throws {
        signal(SIGPIPE, SIG_IGN)
        print("parley-load sip-ramp: SIP calls to 127.0.0.1:\(sipPort) over UDP from \(sockets) sockets, INVITE → 200 → ACK → BYE → 200 each, at \(rates) a second, \(Format.fixed(stepSeconds, 0)) s a step; stopping after a step with under \(Format.fixed(stopBelow * 100, 0)) % accepted")
        Console.flush()
        let ramp = try SIPRampRun(serverPort: sipPort, sockets: sockets, answerTimeout: answerTimeout)
        let progress = Progress()
        var steps: [SIPRampRun.Step] = []
        for rate in rateList {
            let step = ramp.run(rate: rate, seconds: stepSeconds, serverPid: serverPid, progress: progress)
            steps.append(step)
            progress.finish()
            print(Self.line(step))
            Console.flush()
            if step.acceptedShare < stopBelow { break }
        }
        let best = steps.max { $0.acceptedPerSecond < $1.acceptedPerSecond }
        if let best {
            print("calls accepted a second: \(Format.fixed(best.acceptedPerSecond, 0)) (offered \(Format.fixed(best.rate, 0)) a second; \(Format.fixed(best.acceptedShare * 100, 1)) % accepted)")
        }
        if let json {
            let report = JSON.object([("steps", .array(steps.map(Self.json))), ("accepted_per_second", best.map { .number($0.acceptedPerSecond) } ?? .null)])
            try TextFile.write(report.pretty + "\n", to: json)
        }
    }

    static func line(_ step: SIPRampRun.Step) -> String {
        func ms(_ value: UInt64) -> String { LatencyRecorder.format(nanoseconds: value) }
        let refused = step.refused.sorted { $0.key < $1.key }.map { "\($0.value) × \($0.key)" }.joined(separator: ", ")
        let cpu = step.serverCPU.map { cpu in
            "server CPU \(Format.fixed(cpu, 2)) s\(step.accepted > 0 ? ", \(Format.fixed(cpu / Double(step.accepted) * 1e6, 0)) µs a call accepted" : "")"
        } ?? "server CPU n/a"
        return "  \(Format.fixed(step.rate, 0))/s: \(Format.grouped(step.offered)) INVITEs, \(Format.grouped(step.accepted)) accepted (\(Format.fixed(step.acceptedPerSecond, 0))/s), "
            + "refused \(refused.isEmpty ? "none" : refused), \(step.unanswered) unanswered, \(step.completed) hung up; "
            + "set-up p50 \(ms(step.setup.percentile(50))), p99 \(ms(step.setup.percentile(99))), max \(ms(step.setup.maximum)); \(step.resends) INVITEs resent; \(cpu)"
    }

    static func json(_ step: SIPRampRun.Step) -> JSON {
        .object([
            ("rate", .number(step.rate)), ("seconds", .number(step.seconds)), ("offered", .number(Double(step.offered))),
            ("accepted", .number(Double(step.accepted))), ("accepted_per_second", .number(step.acceptedPerSecond)),
            ("refused", .object(step.refused.map { (String($0.key), .number(Double($0.value))) })),
            ("unanswered", .number(Double(step.unanswered))), ("completed", .number(Double(step.completed))),
            ("invite_resends", .number(Double(step.resends))), ("setup", step.setup.json),
            ("server_cpu_seconds", step.serverCPU.map { .number($0) } ?? .null),
        ])
    }
}
