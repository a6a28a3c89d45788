import ArgumentParser
import Loop
#if canImport(Glibc)
import Glibc
#endif

/// `parley-load eval FILE…`: scripted conversations against a Realtime server, each expectation
/// reported, a summary line, JUnit XML for CI, and exit status 1 when any failed.
struct EvalCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "eval",
        abstract: "Scripted conversations against a Realtime server: spoken and typed turns, pauses, interruptions, and what must have happened.",
        discussion: """
            Each FILE is a script, one step a line (docs/operations.md, "Scripted evals"; examples \
            in LoadTests/evals/):
              name, voice, session JSON, tool NAME OUTPUT
              user says [VOICE:] WORDS [pause N ms] WORDS · user plays FILE.wav · user types WORDS
              user interrupts after N ms [VOICE:] WORDS · pause N ms
              expect transcript contains A|B · expect reply contains A|B · expect reply does not contain A
              expect tool NAME [with key=value, …] · expect no tool · expect reply starts within N ms
              expect reply cut · expect reply not cut · expect no reply · expect no early reply
            Speech is made before each session opens, with espeak-ng (en-us, en-gb+f3) or Piper (joe, \
            joe-1.25, its noise off: the same audio every run) from --speech-venv. PARLEY_LOAD_API_KEY, when set, is sent as the bearer key.
            """)

    @Argument(help: "Eval scripts.")
    var files: [String]

    @Option(help: "The server: ws://HOST:PORT[/path] on a loopback address (the path defaults to /v1/realtime).")
    var url = "ws://127.0.0.1:8080"

    @Option(help: "Write the results as JUnit XML to this file.")
    var junit: String?

    @Option(help: "Milliseconds a turn waits for a reply to begin before it counts as none.")
    var replyTimeoutMs = 8_000

    @Option(help: "The venv holding Piper and its joe voice.")
    var speechVenv = ".venv-speech"

    func validate() throws {
        guard !files.isEmpty else { throw ValidationError("give at least one eval script") }
        guard replyTimeoutMs > 0 else { throw ValidationError("--reply-timeout-ms must be positive") }
    }

    func run() throws {
        signal(SIGPIPE, SIG_IGN)
        let target = try LoadTarget(url)
        let path = target.path == "/" ? "/v1/realtime" : target.path
        var suites: [JUnitReport.Suite] = []
        for file in files {
            suites.append(evaluate(file, target: target, path: path))
        }
        let verdicts = suites.flatMap(\.verdicts)
        let passed = verdicts.filter(\.passed).count
        let errors = suites.filter { $0.error != nil }.count
        if let junit { try TextFile.write(JUnitReport.xml(suites), to: junit) }
        print("eval: \(passed) passed, \(verdicts.count - passed) failed" + (errors > 0 ? ", \(errors) script(s) could not run" : ""))
        Console.flush()
        if passed < verdicts.count || errors > 0 { throw ExitCode.failure }
    }

    private func evaluate(_ file: String, target: LoadTarget, path: String) -> JUnitReport.Suite {
        let started = MonotonicClock.nanoseconds()
        func seconds() -> Double { Double(MonotonicClock.nanoseconds() - started) / 1e9 }
        let base = String(file.split(separator: "/").last ?? Substring(file))
        let script: EvalScript
        do {
            script = try EvalScript(parsing: try TextFile.read(file), name: base)
        } catch {
            print("\(file): \(error)")
            return JUnitReport.Suite(name: base, file: file, verdicts: [], error: "\(error)", seconds: seconds())
        }
        let count = script.steps.reduce(0) { if case .turn(let turn) = $1 { $0 + turn.expectations.count } else { $0 } }
        print("\(file): \(script.name), \(count) expectation(s) against \(target.url)\(target.path == path ? "" : path)")
        Console.flush()
        let observations: [EvalObservation]
        do {
            let directory = file.contains("/") ? String(file[..<file.lastIndex(of: "/")!]) : "."
            let speech = try EvalRun.speech(for: script, directory: directory) { try TurnTakingSpeechMaker(venv: speechVenv, sameReadingEachTime: true) }
            observations = try EvalRun(script: script, target: target, path: path, replyTimeoutMs: replyTimeoutMs, speech: speech).run()
        } catch {
            print("  could not run: \(error)")
            return JUnitReport.Suite(name: script.name, file: file, verdicts: [], error: "\(error)", seconds: seconds())
        }
        var verdicts: [EvalVerdict] = []
        let turns = script.steps.compactMap { if case .turn(let turn) = $0 { turn } else { nil } }
        for (turn, seen) in zip(turns, observations) {
            for expectation in turn.expectations {
                let verdict = EvalJudge.judge(expectation, seen)
                verdicts.append(verdict)
                print("  \(verdict.passed ? "pass" : "FAIL")  line \(expectation.line): expect \(expectation.text)  (\(verdict.detail))")
            }
        }
        Console.flush()
        return JUnitReport.Suite(name: script.name, file: file, verdicts: verdicts, error: nil, seconds: seconds())
    }
}
