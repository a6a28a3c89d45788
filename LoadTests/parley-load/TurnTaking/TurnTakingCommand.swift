import ArgumentParser
import JSON
import Loop
#if canImport(Glibc)
import Glibc
#endif

/// `parley-load turn-taking`: a fixed set of spoken scenarios against one or more Parley servers,
/// side by side, to compare turn-taking pipelines (`make bench-turns` runs it against the energy
/// detector with silence and against Silero with Smart Turn). One session at a time, speech
/// streamed at real-time pace, events timed as they arrive; it starts no server itself.
struct TurnTakingCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "turn-taking",
        abstract: "Spoken turn-taking scenarios against Parley servers, side by side: end-of-turn latency, premature ends in pauses, backchannels and interruptions.",
        discussion: """
            Four scenarios, each in every voice (--voices) and repeated --repeat times, in sessions on \
            /v1/realtime with semantic_vad at auto eagerness (the same settings on every server):
              end           9 finished sentences (questions, requests, short answers): the last word's last \
            sample sent → speech_stopped received
              pause         10 sentences with a pause mid-thought (--pauses; after a function word, inside a \
            number, a code and an address, in a list, after a hesitation), and 2 whole questions the speaker goes on \
            with after the pause, counted apart: turns ended in the pause
              backchannel   8 backchannels ("uh huh", "mm hmm", "okay", "yeah", "right", "sure", "I see", "got it") \
            one second into a long spoken reply: replies cut
              interruption  4 interruptions ("stop", "no, no", "wait, actually I meant Paris", "okay but wait, I \
            meant Boston") one second into the reply: first word sent → reply stops
            Speech is made here: Piper's joe voice from --speech-venv (scripts/tools/speech-models.sh), \
            espeak-ng and flite. The servers alternate case by case, so a machine that gets busier mid-run \
            weighs on each alike.
            """)

    @Option(help: "A server to measure, ws://HOST:PORT on a loopback address (repeat the option for several, side by side).")
    var url: [String] = ["ws://127.0.0.1:8080"]

    @Option(help: "A name for each --url, in the same order (default: the URL).")
    var label: [String] = []

    @Option(help: "Voices, comma-separated: joe (Piper joe ×1.0), joe-1.25 (slower), en-us, en-gb+f3 (espeak-ng), slt, rms (flite).")
    var voices = TurnTakingVoice.allCases.map(\.rawValue).joined(separator: ",")

    @Option(help: "Scenarios, comma-separated: end, pause, backchannel, interruption.")
    var scenarios = "end,pause,backchannel,interruption"

    @Option(help: "Pauses mid-thought, in milliseconds, comma-separated.")
    var pauses = "500,800,1000,1500"

    @Option(help: "The line the cases are spoken over: clean (pcm16 at 24 kHz), g711 (µ-law at 8 kHz), g711-noisy (that, with pink noise 10 dB under the speech, the session denoising near field).")
    var line = TurnTakingLine.clean.rawValue

    @Option(help: "Times each case is run on each server.")
    var `repeat` = 3

    @Option(help: "The venv holding Piper and its joe voice.")
    var speechVenv = ".venv-speech"

    @Option(help: "Write the results as JSON to this file.")
    var json: String?

    static let sentences = [
        "What is the weather like in Paris today?",
        "Please book me a table for two at eight.",
        "Good morning, how are you?",
        "Can you send the report to my manager?",
        "I would like to cancel my subscription.",
        "Yes.",
        "Paris.",
        "Tomorrow at nine.",
        "How much does a ticket to Rome cost?",
    ]
    /// (category, before the pause, after it).
    static let pausedSentences = [
        ("function word", "I need a flight to", "Boston on Friday."),
        ("function word", "I would like to order", "a large pizza with mushrooms."),
        ("function word", "Can you tell me", "what the weather is like in Paris?"),
        ("number", "My account number is four five", "six seven."),
        ("number", "My account number is", "four five six seven."),
        ("code", "The code is A B", "seven two nine."),
        ("address", "I live at twenty two", "Baker Street."),
        ("list", "I need milk, eggs,", "and bread."),
        ("hesitation", "I want to um", "book a table for two."),
        ("hesitation", "Let me think", "the second one please."),
        // A whole question, then more of it: answered in the pause, the reply is to a question
        // asked (TurnWords' `asked`), the cost of answering questions sooner.
        (wholeQuestion, "What time does the museum open", "on Sunday?"),
        (wholeQuestion, "Is there a train", "to Boston tonight?"),
    ]
    /// The category whose words before the pause are a whole question: not counted among the
    /// pauses mid-thought (the issue's "0 premature replies"), reported on its own line.
    static let wholeQuestion = "question, then more"
    static let backchannels = ["uh huh", "mm hmm", "okay", "yeah", "right", "sure", "I see", "got it"]
    static let interruptions = ["stop", "no, no", "wait, actually I meant Paris", "okay but wait, I meant Boston"]
    var pausesMs: [Int] { pauses.split(separator: ",").compactMap { Int($0) } }
    static let scenarioNames = ["end", "pause", "backchannel", "interruption"]

    private var chosenVoices: [TurnTakingVoice] { voices.split(separator: ",").compactMap { TurnTakingVoice(rawValue: String($0)) } }
    private var chosenScenarios: [String] { scenarios.split(separator: ",").map(String.init) }

    func validate() throws {
        guard (1...20).contains(self.repeat) else { throw ValidationError("--repeat must be 1...20") }
        guard !chosenVoices.isEmpty, chosenVoices.count == voices.split(separator: ",").count else {
            throw ValidationError("--voices takes \(TurnTakingVoice.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard !chosenScenarios.isEmpty, chosenScenarios.allSatisfy(Self.scenarioNames.contains) else {
            throw ValidationError("--scenarios takes \(Self.scenarioNames.joined(separator: ", "))")
        }
        guard !pausesMs.isEmpty, pausesMs.count == pauses.split(separator: ",").count, pausesMs.allSatisfy({ (100...5_000).contains($0) }) else {
            throw ValidationError("--pauses takes milliseconds from 100 to 5000, comma-separated")
        }
        guard TurnTakingLine(rawValue: line) != nil else {
            throw ValidationError("--line takes \(TurnTakingLine.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard label.isEmpty || label.count == url.count else { throw ValidationError("give one --label per --url, or none") }
        for url in url {
            let target = try LoadTarget(url)
            guard target.path == "/" || target.path == "/v1/realtime" else {
                throw ValidationError("\(url): give the server (ws://HOST:PORT); the sessions are on /v1/realtime")
            }
        }
    }

    /// Every case, in the order run: repeat by repeat, so an early stop still covers every scenario.
    var cases: [TurnTakingCase] {
        var kinds: [TurnTakingCase.Kind] = []
        for scenario in chosenScenarios {
            switch scenario {
            case "end": kinds += Self.sentences.map { .endOfTurn($0) }
            case "pause": kinds += pausesMs.flatMap { ms in Self.pausedSentences.map { .pause(category: $0.0, first: $0.1, second: $0.2, ms: ms) } }
            case "backchannel": kinds += Self.backchannels.map { .backchannel($0) }
            default: kinds += Self.interruptions.map { .interruption($0) }
            }
        }
        let line = TurnTakingLine(rawValue: self.line) ?? .clean
        let once = kinds.flatMap { kind in chosenVoices.map { TurnTakingCase(kind: kind, voice: $0, line: line) } }
        return (0..<self.repeat).flatMap { _ in once }
    }

    func run() throws {
        signal(SIGPIPE, SIG_IGN)
        let targets = try url.map { try LoadTarget($0) }
        let labels = label.isEmpty ? url : label
        let cases = self.cases
        print("parley-load turn-taking: \(cases.count) cases on each of \(targets.count) server(s) (\(labels.joined(separator: " | "))), scenarios \(chosenScenarios.joined(separator: ",")), line \(line), voices \(chosenVoices.map(\.rawValue).joined(separator: ",")), repeat \(self.repeat)")
        Console.flush()

        // Every server answers before anything else, or the run stops here rather than filling a
        // table with refusals; its counters are read now to be subtracted at the end.
        let before = try targets.map { target in
            do throws(ServerMetrics.Unreachable) { return try ServerMetrics.fetch(from: target) } catch { throw LoadFailure.unreachable(error, target) }
        }

        // Speech first, every text in every voice, so that no synthesiser runs while a case is timed.
        let maker = try TurnTakingSpeechMaker(venv: speechVenv)
        defer { maker.remove() }
        for item in cases.prefix(cases.count / self.repeat) {
            switch item.kind {
            case .endOfTurn(let text), .backchannel(let text), .interruption(let text): _ = try maker.say(text, item.voice)
            case .pause(_, let first, let second, _):
                _ = try maker.say(first, item.voice)
                _ = try maker.say(second, item.voice)
            }
        }
        // Making the speech (its resampling included) is not the load: the client CPU counts from here.
        let cpuStart = CPUTime.ofSelf()
        let started = MonotonicClock.nanoseconds()
        var results = zip(labels, url).map { TurnTakingResults(label: $0, url: $1) }
        for (n, item) in cases.enumerated() {
            Console.error("\rcase \(n + 1) of \(cases.count): \(item.kind.name) \"\(item.kind.text)\" in \(item.voice.rawValue)            ")
            for (i, target) in targets.enumerated() {
                do {
                    try item.run(on: target, path: "/v1/realtime", speech: maker, into: &results[i])
                } catch {
                    results[i].problems.append("\(item.kind.name) \"\(item.kind.text)\" (\(item.voice.rawValue)): \(error)")
                }
            }
        }
        Console.error("\n")
        for (i, target) in targets.enumerated() {
            guard let end = try? ServerMetrics.fetch(from: target) else { continue }
            results[i].counters = Self.counters(before[i], end)
        }
        let summary = TurnTakingSummary(servers: results, scenarios: chosenScenarios, voices: chosenVoices, repeats: self.repeat, pausesMs: pausesMs,
                                        pauseCategories: Self.pausedSentences.map(\.0).reduce(into: []) { if !$0.contains($1) { $0.append($1) } },
                                        wallSeconds: Double(MonotonicClock.nanoseconds() - started) / 1e9, clientCPU: CPUTime.ofSelf() - cpuStart)
        print(summary.text)
        if let json { try TextFile.write(summary.json.pretty + "\n", to: json) }
    }

    /// The turn-taking counters a Parley server exports, as differences over the run (labelled
    /// series one row each). A server without them (another build) shows n/a.
    static func counters(_ start: ServerMetrics, _ end: ServerMetrics) -> [(String, Double)] {
        var out: [(String, Double)] = []
        for name in ["parley_turn_ends_total", "parley_replies_resumed_total"] {
            for (labels, value) in end.series(name).sorted(by: { $0.key < $1.key }) {
                out.append(("\(name){\(labels)}", value - (start.series(name)[labels] ?? 0)))
            }
        }
        for name in ["parley_turn_premature_ends_total", "parley_interruptions_total", "parley_backchannels_ignored_total", "parley_turn_model_seconds_count",
                     "parley_transcription_seconds_count"] {
            if let value = end.value(name) { out.append((name, value - (start.value(name) ?? 0))) }
        }
        return out
    }
}
