import ArgumentParser
import JSON
import Loop
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// `parley-load talkers`: N people talking to the embedded pipeline at once (Whisper, the built-in
/// agent, Piper), each a session on /v1/realtime speaking sentences at real-time pace and waiting
/// for the spoken reply, timed on the client's clock and by the server's `parley.turn.timeline`;
/// with a ramp (`--talkers 1,5,10,20`), the talkers one server core carries. It starts no server.
struct TalkersCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "talkers",
        abstract: "Concurrent talkers against the embedded pipeline: end of turn, reply latency, barge-ins, and the turn's stages.",
        discussion: """
            Each talker is a session on /v1/realtime (output_modalities ["audio"], pcm16 at 24 kHz, \
            include ["parley.turn.timeline"]) whose microphone stays open: a sentence of 2 to 8 s \
            streamed in 20 ms appends at real-time pace, then silence until the spoken reply has \
            played out, then the next sentence; every --barge-in-every'th turn it speaks over the \
            reply half a second in. Per turn, on the client's monotonic clock:
              (a) the last word's last sample sent → input_audio_buffer.speech_stopped
              (b) speech_stopped → the first response.output_audio.delta of the response created after it
              (c) the last word → that delta
              (d) a barge-in's first sample sent → the cut reply's last audio delta, → output_audio_buffer.cleared, → response.done cancelled
            and each turn's parley.turn.timeline stages beside the server's parley_turn_stage_seconds \
            (scraped before and after). --talkers 1,5,10,20 runs each step in turn and prints the \
            talkers per server core whose transcription p99 stays under --transcription-bound-ms.
            """)

    @Option(help: "The server, ws://HOST:PORT on a loopback address (the sessions are on /v1/realtime).")
    var url = "ws://127.0.0.1:8080"

    @Option(help: "Concurrent talkers, or a ramp run step by step: 10, or 1,5,10,20.")
    var talkers = "10"

    @Option(help: "semantic_vad (at auto eagerness) or server_vad.")
    var turnDetection = "semantic_vad"

    @Option(help: "Turns each talker takes (a step ends when every talker is done, or at --duration).")
    var turnsPerTalker = 6

    @Option(help: "Seconds a step may last at most: no turn starts after it, and a turn under way is cut short.")
    var duration = 300

    @Option(help: "Every Nth turn of a talker speaks over the reply (0: never).")
    var bargeInEvery = 3

    @Option(help: "Milliseconds over which the talkers' first sentences are spread.")
    var staggerMs = 5_000

    @Option(help: "Voices, comma-separated: joe (Piper joe ×1.0), joe-1.25 (slower), en-us, en-gb+f3 (espeak-ng).")
    var voices = TurnTakingVoice.allCases.map(\.rawValue).joined(separator: ",")

    @Option(help: "The venv holding Piper and its joe voice.")
    var speechVenv = ".venv-speech"

    @Option(help: "The server's process id: its CPU (with its children's, the speech helper's) read from /proc; otherwise from its /metrics.")
    var serverPid: Int32?

    @Option(help: "For a ramp: the transcription stage's p99 a step must stay under, in ms.")
    var transcriptionBoundMs = 500.0

    @Option(help: "Write the results as JSON to this file.")
    var json: String?

    @Flag(help: "Ask each session to be recorded (recording: true; the server must run with --recordings DIR).")
    var record = false

    /// 2 to 8 s each in Piper's joe voice, some with clauses. What a person asks the built-in agent
    /// and it answers in a sentence (sums, counts, thanks, goodbye), so a turn's reply lasts seconds,
    /// as a voice agent's should, rather than its 20 s "I didn't understand", which a talker would
    /// have to hear out before speaking again.
    static let sentences = [
        "Could you please tell me what twelve times seven is?",
        "I was wondering, what is three hundred and forty five plus one hundred and twenty?",
        "How many words are in the sentence, the quick brown fox jumps over the lazy dog?",
        "Thank you very much, that was really helpful for my trip to Paris.",
        "If I had nine boxes with twelve apples in each, what is nine times twelve?",
        "What is one thousand divided by eight?",
        "How many letters are in the word communication?",
        "Okay, that is all I needed for today, goodbye.",
    ]
    static let interruptions = ["stop", "wait, actually I meant Paris"]
    static let detections = ["semantic_vad", "server_vad"]

    var steps: [Int] { talkers.split(separator: ",").compactMap { Int($0.trimmingPrefix(" ")) } }
    private var chosenVoices: [TurnTakingVoice] { voices.split(separator: ",").compactMap { TurnTakingVoice(rawValue: String($0)) } }

    func validate() throws {
        guard !steps.isEmpty, steps.count == talkers.split(separator: ",", omittingEmptySubsequences: false).count, steps.allSatisfy({ (1...200).contains($0) }) else {
            throw ValidationError("--talkers takes a count of 1...200, or several comma-separated (1,5,10,20)")
        }
        guard Self.detections.contains(turnDetection) else { throw ValidationError("--turn-detection takes \(Self.detections.joined(separator: " or "))") }
        guard (1...1_000).contains(turnsPerTalker) else { throw ValidationError("--turns-per-talker must be 1...1000") }
        guard (10...3_600).contains(duration) else { throw ValidationError("--duration must be 10...3600 seconds") }
        guard bargeInEvery >= 0 else { throw ValidationError("--barge-in-every must be 0 (never) or more") }
        guard (0...60_000).contains(staggerMs) else { throw ValidationError("--stagger-ms must be 0...60000") }
        guard transcriptionBoundMs > 0 else { throw ValidationError("--transcription-bound-ms must be above 0") }
        guard !chosenVoices.isEmpty, chosenVoices.count == voices.split(separator: ",").count else {
            throw ValidationError("--voices takes \(TurnTakingVoice.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        if let serverPid, ProcessFigures(pid: serverPid).cpuSeconds == nil { throw ValidationError("--server-pid \(serverPid): no such process to read /proc from") }
        let target: LoadTarget
        do { target = try LoadTarget(url) } catch { throw ValidationError(error.description) }
        guard target.path == "/" || target.path == "/v1/realtime" else {
            throw ValidationError("\(url): give the server (ws://HOST:PORT); the sessions are on /v1/realtime")
        }
        guard target.tls == nil else { throw ValidationError("\(url): talkers speak ws:// only (the server is on this machine)") }
    }

    /// The session every talker asks for: the embedded pipeline's spoken replies, and the timeline.
    var sessionUpdate: String {
        let detection = turnDetection == "server_vad" ? #""type":"server_vad""# : #""type":"semantic_vad","eagerness":"auto""#
        return #"{"type":"session.update","session":{"type":"realtime","output_modalities":["audio"],"include":["parley.turn.timeline"],"# + (record ? #""recording":true,"# : "") + #""audio":{"input":{"format":{"type":"audio/pcm","rate":24000},"turn_detection":{"# + detection
            + #","create_response":true,"interrupt_response":true}},"output":{"format":{"type":"audio/pcm","rate":24000}}}}}"#
    }

    func run() throws {
        signal(SIGPIPE, SIG_IGN)
        let target = try LoadTarget(url)
        print("parley-load talkers: \(steps.map(String.init).joined(separator: ", ")) talker(s) against \(url), \(turnDetection), \(turnsPerTalker) turns each (at most \(duration) s a step), a barge-in every \(bargeInEvery == 0 ? "never" : "\(bargeInEvery) turns"), voices \(chosenVoices.map(\.rawValue).joined(separator: ","))")
        Console.flush()
        do throws(ServerMetrics.Unreachable) { _ = try ServerMetrics.fetch(from: target) } catch { throw LoadFailure.unreachable(error, target) }

        // Every sentence in every voice before anything is timed: no synthesiser runs in a step.
        let maker = try TurnTakingSpeechMaker(venv: speechVenv)
        defer { maker.remove() }
        func spoken(_ text: String, _ voice: TurnTakingVoice) throws -> SpokenLine {
            let samples = try maker.say(text, voice)
            guard let bounds = SpeechBounds(samples) else { throw LoadFailure("\(voice.description): silent speech for \(text)") }
            return SpokenLine(text: text, voice: voice, samples: samples, bounds: bounds)
        }
        Console.error("making speech: \(Self.sentences.count + Self.interruptions.count) texts in \(chosenVoices.count) voice(s)\n")
        let lines = try chosenVoices.map { voice in try Self.sentences.map { try spoken($0, voice) } }
        let interruptions = try chosenVoices.map { voice in try Self.interruptions.map { try spoken($0, voice) } }

        var done: [TalkersStep] = []
        for count in steps {
            let step = try runStep(count, target, lines, interruptions)
            print("\n" + step.text)
            Console.flush()
            done.append(step)
        }
        let summary = TalkersSummary(steps: done, turnDetection: turnDetection, voices: chosenVoices, turnsPerTalker: turnsPerTalker,
                                     bargeInEvery: bargeInEvery, transcriptionBoundMs: transcriptionBoundMs, cores: Cores.online)
        if done.count > 1 { print("\n" + summary.rampText + "\n" + summary.talkersPerCoreLine) }
        if let json { try TextFile.write(summary.json.pretty + "\n", to: json) }
    }

    /// The server's CPU seconds so far: its process tree's from /proc with --server-pid, else its /metrics'.
    private func serverCPU(_ metrics: ServerMetrics?) -> Double? {
        if let serverPid { return ProcessFigures(pid: serverPid).treeCPUSeconds }
        return metrics?.cpuSeconds
    }

    private func runStep(_ count: Int, _ target: LoadTarget, _ lines: [[SpokenLine]], _ interruptions: [[SpokenLine]]) throws -> TalkersStep {
        let before = try? ServerMetrics.fetch(from: target)
        let serverBefore = serverCPU(before), machineBefore = MachineCPU.now()
        let cpuStart = CPUTime.ofSelf()
        let started = MonotonicClock.nanoseconds()
        let deadline = started + UInt64(duration) * 1_000_000_000
        let results = Mutex<(turns: [TalkerTurn], problems: [String])>(([], []))
        var threads: [pthread_t] = []
        Console.error("\(count) talker(s) speaking…\n")
        for n in 0..<count {
            // Voices and sentences rotate, so that talkers side by side say different things.
            let voice = n % lines.count
            let mine = (0..<Self.sentences.count).map { lines[voice][(n + $0) % Self.sentences.count] }
            let talker = Talker(number: n, target: target, sessionUpdate: sessionUpdate, sentences: mine, interruptions: interruptions[voice],
                                turns: turnsPerTalker, bargeInEvery: bargeInEvery, staggerMs: staggerMs * n / count, deadline: deadline)
            threads.append(try Thread.spawn(name: "talker-\(n)") {
                do {
                    let turns = try talker.run()
                    results.withLock { $0.turns += turns }
                } catch {
                    results.withLock { $0.problems.append("talker \(n): \(error)") }
                }
            })
        }
        threads.forEach(Thread.join)
        let wall = Double(MonotonicClock.nanoseconds() - started) / 1e9
        let clientCPU = CPUTime.ofSelf() - cpuStart
        let after = try? ServerMetrics.fetch(from: target)
        let serverSeconds = both(serverBefore, serverCPU(after)).map { $1 - $0 }
        var stages: [String: ServerHistogram] = [:]
        if let before, let after {
            for stage in TurnStageNames.all {
                let label = "stage=\"\(stage)\""
                if let end = ServerHistogram(TurnStageNames.histogram, in: after, label: label),
                   let start = ServerHistogram(TurnStageNames.histogram, in: before, label: label), let since = end.since(start) {
                    stages[stage] = since
                }
            }
        }
        let (turns, problems) = results.withLock { $0 }
        return TalkersStep(talkers: count, turns: turns.sorted { ($0.talker, $0.index) < ($1.talker, $1.index) }, wallSeconds: wall, clientCPU: clientCPU,
                           stealFraction: both(machineBefore, MachineCPU.now()).map { $1.stealFraction(since: $0) },
                           serverCPUSeconds: serverSeconds, serverStages: stages, problems: problems)
    }
}

/// Both, or nil: `both(a, b).map { … }` for two optionals.
private func both<A, B>(_ a: A?, _ b: B?) -> (A, B)? {
    guard let a, let b else { return nil }
    return (a, b)
}
