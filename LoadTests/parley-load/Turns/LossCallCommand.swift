import ArgumentParser
import Codec
import JSON
import Loop
#if canImport(Glibc)
import Glibc
#endif

/// `parley-load loss-call`: the WebSocket half of `make bench-webrtc-loss`
/// (scripts/benchmarks/webrtc-loss.sh), beside webrtc_loss_call.py's aiortc call.
struct LossCallCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "loss-call",
        abstract: "One Realtime session through tcp_relay.py asking spoken questions in turn; reply latency and playout gaps, as loss_measure.py reports them.",
        discussion: """
            The microphone is a 20 ms clock: each tick sends `input_audio_buffer.append` with 20 ms of \
            pcm16 at 24 kHz, the question's while one is queued, else silence (server_vad needs the \
            silence to see the turn end). The reply comes as `response.output_audio.delta` events, each \
            stamped as it is read off the socket and cut into 20 ms units. A turn: --pause s of silence, \
            the question (the *.24000.wav files of --questions in turn, name order), its response.done \
            (or --reply-timeout), --drain s more. Latency: the question's last sample sent to the \
            reply's first audio; gaps: ticks of a 20 ms playout clock started --playout-ms after the \
            first unit with no unit come to play (loss_measure.py's stream_gaps). Writes the report as \
            loss_measure.py's summary (JSON) to --report; prints a line a turn.
            """)

    @Option(help: "tcp_relay.py's --listen (the session goes to ws://127.0.0.1:PORT/v1/realtime).")
    var relayPort: Int

    @Option(help: "A folder of *.24000.wav questions (24 kHz mono pcm16).")
    var questions: String

    @Option var minutes = 3.0

    @Option(help: "The report's column heading.")
    var label = "WebSocket (TCP relay)"

    @Option(help: "Where the JSON report goes.")
    var report: String

    @Option(help: "The playout clock's start after the reply's first audio.")
    var playoutMs = 60.0

    @Option(help: "server_vad's silence_duration_ms.")
    var silenceMs = 600

    @Option(help: "Seconds of silence before each question.")
    var pause = 1.0

    @Option(help: "Seconds after response.done for the last deltas.")
    var drain = 1.0

    @Option var replyTimeout = 30.0

    func validate() throws {
        guard (1...65535).contains(relayPort), minutes > 0, minutes <= 600 else { throw ValidationError("--relay-port 1...65535, --minutes (0, 600]") }
    }

    static let rate = 24_000
    static let frame = 480

    func run() throws {
        signal(SIGPIPE, SIG_IGN)
        let spoken = try Self.questions(in: questions)
        let call = try LossCall(target: try LoadTarget("ws://127.0.0.1:\(relayPort)/v1/realtime?model=gpt-realtime"))
        let hardEnd = MonotonicClock.nanoseconds() + MonotonicClock.nanoseconds(minutes * 60 + 120)
        guard call.waitFor("session.created", seconds: 15) != nil else { throw LoadFailure("no session.created") }
        call.send(#"{"type":"session.update","session":{"type":"realtime","output_modalities":["audio"],"audio":{"input":{"format":{"type":"audio/pcm","rate":24000},"transcription":{"model":"whisper-1"},"turn_detection":{"type":"server_vad","silence_duration_ms":\#(silenceMs)}},"output":{"format":{"type":"audio/pcm","rate":24000}}}}}"#)
        guard call.waitFor("session.updated", seconds: 15) != nil else { throw LoadFailure("no session.updated") }
        call.startMicrophone()
        print("websocket: session up, asking")
        Console.flush()

        var turns: [JSON] = []
        var latencies: [Double] = []
        var units = 0, gaps = 0
        let started = MonotonicClock.nanoseconds()
        let deadline = started + MonotonicClock.nanoseconds(minutes * 60)
        while MonotonicClock.nanoseconds() < deadline && MonotonicClock.nanoseconds() < hardEnd {
            let (name, samples) = spoken[turns.count % spoken.count]
            call.pump(seconds: pause)
            let mark = call.events.count
            call.audio.removeAll()
            guard let questionEnd = call.say(samples, within: Double(samples.count) / Double(Self.rate) + 10) else {
                throw LoadFailure("the question \(name) was not sent in time (the session is gone?)")
            }
            var turn: [(String, JSON)] = [("question", .string(name)), ("latency", .null), ("units", .int(0)), ("gaps", .int(0))]
            if let done = call.waitFor("response.done", seconds: replyTimeout, since: mark) {
                turn.append(("status", done["response"]?["status"] ?? .null))
                call.pump(seconds: drain)
            }
            let transcript = call.waitFor("conversation.item.input_audio_transcription.completed", seconds: 0, since: mark)?["transcript"]?.string
            turn.append(("transcript", transcript.map(JSON.string) ?? .null))
            let deltas = call.audio.filter { $0.came >= questionEnd }
            var latency: Double?
            if let first = deltas.first {
                latency = (Double(first.came - questionEnd) / 1e9 * 1000).rounded(.toNearestOrEven) / 1000
                // Each delta's 20 ms units all came when it did (a partial last unit counts whole).
                let arrivals = deltas.flatMap { delta in Array(repeating: delta.came, count: (delta.samples + Self.frame - 1) / Self.frame) }
                let (u, g) = Self.streamGaps(arrivals, playout: playoutMs / 1000)
                turn[1].1 = .number(latency!)
                turn[2].1 = .int(u)
                turn[3].1 = .int(g)
                units += u
                gaps += g
                latencies.append(latency!)
                turn.append(("deltas", .int(deltas.count)))
                // Kept for another playout model: each delta's arrival after the first, and its length.
                turn.append(("arrivals_ms", .array(deltas.map { .array([.number((Double($0.came - first.came) / 1e6).rounded(.toNearestOrEven)),
                                                                       .number((Double($0.samples) / Double(Self.rate) * 1000).rounded(.toNearestOrEven))]) })))
            }
            turns.append(.object(turn))
            print("websocket: \(name): latency \(latency.map { "\($0)" } ?? "None") s, \(turn[2].1.int ?? 0) units, \(turn[3].1.int ?? 0) gaps, heard \(transcript.map { "'\($0)'" } ?? "None")")
            Console.flush()
        }
        let seconds = MonotonicClock.seconds(since: started)
        call.close()
        try TextFile.write(Self.summary(label: label, turns: turns, latencies: latencies, units: units, gaps: gaps, seconds: seconds,
                                        cpu: CPUTime.ofSelf().total, playoutMs: playoutMs).pretty, to: report)
    }

    /// (name, samples) for every `*.24000.wav` in the folder, in name order.
    static func questions(in folder: String) throws -> [(String, [Int16])] {
        let suffix = ".\(rate).wav"
        let names = Directory.names(in: folder).filter { $0.hasSuffix(suffix) }.sorted()
        guard !names.isEmpty else { throw LoadFailure("no *\(suffix) in \(folder)") }
        return try names.map { name in
            let wav = try WAVFile.read(path: folder + "/" + name)
            guard wav.sampleRate == rate, wav.channels == 1 else { throw LoadFailure("\(name): must be \(rate) Hz mono pcm16") }
            return (String(name.dropLast(suffix.count)), wav.samples)
        }
    }

    /// loss_measure.py's stream_gaps: (units, gaps) of a reply played as a stream; each tick plays
    /// the next unit that has come, and is a gap when none has.
    static func streamGaps(_ arrivals: [UInt64], playout: Double) -> (Int, Int) {
        guard let first = arrivals.first else { return (0, 0) }
        var tick = Double(first) / 1e9 + playout
        var gaps = 0
        for came in arrivals.map({ Double($0) / 1e9 }) {
            while came > tick {
                gaps += 1
                tick += 0.020
            }
            tick += 0.020
        }
        return (arrivals.count, gaps)
    }

    /// loss_measure.py's summary, the same keys in the same order.
    static func summary(label: String, turns: [JSON], latencies: [Double], units: Int, gaps: Int, seconds: Double, cpu: Double, playoutMs: Double) -> JSON {
        func round(_ x: Double, _ digits: Double) -> JSON { .number((x * digits).rounded(.toNearestOrEven) / digits) }
        func percentile(_ fraction: Double) -> JSON {
            guard !latencies.isEmpty else { return .null }
            let ordered = latencies.sorted()
            return round(ordered[min(ordered.count - 1, Int((fraction * Double(ordered.count - 1)).rounded(.toNearestOrEven)))] * 1000, 1)
        }
        let replyMinutes = Double(units) * 0.020 / 60
        return .object([
            ("transport", .string(label)), ("seconds", round(seconds, 10)), ("questions", .int(turns.count)), ("answered", .int(latencies.count)),
            ("latency_p50_ms", percentile(0.5)), ("latency_p95_ms", percentile(0.95)),
            ("latency_mean_ms", latencies.isEmpty ? .null : round(latencies.reduce(0, +) / Double(latencies.count) * 1000, 1)),
            ("reply_audio_s", round(Double(units) * 0.020, 10)), ("gaps", .int(gaps)),
            ("gaps_per_reply_minute", replyMinutes > 0 ? round(Double(gaps) / replyMinutes, 10) : .null),
            ("gap_fraction", units > 0 ? round(Double(gaps) / Double(units), 10_000) : .null),
            ("client_cpu_s", round(cpu, 10)), ("playout_ms", .number(playoutMs)), ("turns", .array(turns)),
        ])
    }
}

/// The session of one `loss-call`: its events as they came, its reply audio's arrivals, and the
/// microphone's 20 ms clock, all driven from one loop.
final class LossCall: ConnectionEvents {
    private let pool: ConnectionPool
    private(set) var events: [JSON] = []
    /// (when read, samples) of every audio delta.
    var audio: [(came: UInt64, samples: Int)] = []
    private var lost = false
    private var microphoneStart: UInt64?
    private var framesSent: UInt64 = 0
    /// The question being said, and how much of it has been sent.
    private var queue: [Int16] = []
    private var queued = 0
    private var spokenAt: UInt64?
    private var speaking = false

    init(target: LoadTarget) throws(ClientSocket.Failure) {
        pool = try ConnectionPool(.init(target: target, count: 1, firstIndex: 0, sources: 1, rate: 100, connectTimeout: 15))
        pool.events = self
    }

    func received(_ opcode: UInt8, _ payload: UnsafeRawBufferPointer, on connection: ClientConnection, in pool: ConnectionPool) {
        guard opcode == ClientFrame.text else { return }
        let came = MonotonicClock.nanoseconds()
        guard let event = try? JSON(parsing: String(decoding: payload, as: UTF8.self)) else { return }
        let type = event["type"]?.string
        if type == "response.output_audio.delta" || type == "response.audio.delta" {
            // Not kept: minutes of base64. Its samples from its length (pcm16).
            let delta = event["delta"]?.string ?? ""
            let padding = delta.hasSuffix("==") ? 2 : delta.hasSuffix("=") ? 1 : 0
            audio.append((came, (delta.utf8.count / 4 * 3 - padding) / 2))
            return
        }
        events.append(event)
    }

    func lost(_ connection: ClientConnection, reason: String, in pool: ConnectionPool) { lost = true }

    func send(_ text: String) {
        guard let connection = pool.openConnections.first else { return }
        Array(text.utf8).withUnsafeBytes { pool.sendFrame(ClientFrame.text, $0, on: connection) }
    }

    func startMicrophone() { microphoneStart = MonotonicClock.nanoseconds() }

    /// Sends every 20 ms frame whose time has come; returns when the next is due.
    private func tick() -> UInt64 {
        guard let start = microphoneStart else { return .max }
        let frame = LossCallCommand.frame
        while true {
            let due = start + framesSent * 20_000_000
            guard MonotonicClock.nanoseconds() >= due else { return due }
            var chunk = Array(queue[queued..<min(queue.count, queued + frame)])
            queued += chunk.count
            let last = !chunk.isEmpty && queued == queue.count
            chunk += [Int16](repeating: 0, count: frame - chunk.count)
            let bytes = chunk.withUnsafeBytes { Array($0) }  // little-endian on every machine this runs on
            send(#"{"type":"input_audio_buffer.append","audio":"\#(Base64.encode(bytes))"}"#)
            if last && speaking {
                spokenAt = MonotonicClock.nanoseconds()
                speaking = false
            }
            framesSent += 1
        }
    }

    /// Runs the loop (the microphone's clock, the socket) until `done` or `seconds` have passed.
    @discardableResult
    func pump(seconds: Double, until done: () -> Bool = { false }) -> Bool {
        let end = MonotonicClock.nanoseconds() + MonotonicClock.nanoseconds(seconds)
        while true {
            if done() { return true }
            let now = MonotonicClock.nanoseconds()
            guard now < end, !lost else { return done() }
            let next = min(tick(), end)
            let wait = next > now ? Int32(min(20, (next - now) / 1_000_000 + 1)) : 0
            pool.step(timeoutMilliseconds: wait)
        }
    }

    /// The first event of `type` at or after index `since`, waiting up to `seconds`.
    func waitFor(_ type: String, seconds: Double, since: Int = 0) -> JSON? {
        var seen = since
        var found: JSON?
        pump(seconds: seconds) {
            while seen < events.count {
                defer { seen += 1 }
                if events[seen]["type"]?.string == type { found = events[seen]; return true }
            }
            return false
        }
        return found
    }

    /// Queues the question; returns when its last sample was sent (nil if not within `within` s).
    func say(_ samples: [Int16], within: Double) -> UInt64? {
        queue = Array(queue[queued...]) + samples
        queued = 0
        spokenAt = nil
        speaking = true
        pump(seconds: within) { spokenAt != nil }
        return spokenAt
    }

    func close() { pool.closeAll() }
}
