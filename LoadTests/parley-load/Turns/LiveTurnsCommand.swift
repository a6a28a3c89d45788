import ArgumentParser
import JSON
import Loop
#if canImport(Glibc)
import Glibc
#endif

/// `parley-load live-turns`: turn latency on GPT-Live's /v1/live/sessions beside the Realtime API's
/// /v1/realtime, on one server (scripts/benchmarks/bench-live.sh).
struct LiveTurnsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "live-turns",
        abstract: "Time the last word of a spoken question to the reply's first audio, on /v1/live/sessions and /v1/realtime alternated.",
        discussion: """
            Each FILE is one question as raw 24 kHz pcm16. Every round, for every file, one session on \
            each endpoint (the order alternating by round, so neither always meets a warmer helper): \
            the question streamed at real-time pace in 20 ms appends, with 4 s of silence after it; the \
            time from the question's last word (the end of its last 20 ms frame louder than -50 dBFS, as \
            sent) to the reply's first audio delta. Both under the same turn decision (`semantic_vad`, \
            eagerness auto, which Live's sessions always use) and voice (marin). Prints a line a turn \
            and a JSON summary.
            """)

    @Option(help: "The server's base URL; loopback addresses only.")
    var url = "ws://127.0.0.1:8080"

    @Option(help: "Rounds over the files.")
    var rounds = 3

    @Option(help: "Seconds a turn may take.")
    var timeout = 30.0

    @Argument(help: "Raw 24 kHz pcm16 files, one question each.")
    var speech: [String]

    func validate() throws {
        guard !speech.isEmpty, (1...1000).contains(rounds), timeout > 0 else { throw ValidationError("give files, --rounds 1...1000, --timeout > 0") }
    }

    static let rate = 24_000
    static let frameBytes = rate * 2 / 50

    func run() throws {
        signal(SIGPIPE, SIG_IGN)
        var base = url
        if base.hasPrefix("http://") { base = "ws://" + base.dropFirst("http://".count) }
        if base.hasSuffix("/") { base.removeLast() }
        let questions = try speech.map { path in (name: String(path.split(separator: "/").last ?? ""), pcm: try Self.readFile(path)) }
        var results: [String: [Double]] = ["realtime": [], "live": []]
        var failed: [String: Int] = ["realtime": 0, "live": 0]
        for round in 0..<rounds {
            for question in questions {
                for api in round % 2 == 0 ? ["realtime", "live"] : ["live", "realtime"] {
                    let target = try LoadTarget(base + (api == "live" ? "/v1/live/sessions" : "/v1/realtime"))
                    let ms = try LiveTurn(target: target, live: api == "live", speech: question.pcm, timeout: timeout).run()
                    func padded(_ text: String, _ width: Int) -> String { text + String(repeating: " ", count: max(0, width - text.count)) }
                    print("\(padded(api, 8)) \(padded(question.name, 24)) \(ms.map { "\(Int($0.rounded())) ms" } ?? "failed")")
                    Console.flush()
                    if let ms { results[api, default: []].append(ms) } else { failed[api, default: 0] += 1 }
                }
            }
        }
        func summary(_ api: String) -> JSON {
            let v = (results[api] ?? []).sorted()
            func ms(_ x: Double?) -> JSON { x.map { .number($0.rounded()) } ?? .null }
            let median: Double? = v.isEmpty ? nil : (v.count % 2 == 1 ? v[v.count / 2] : (v[v.count / 2 - 1] + v[v.count / 2]) / 2)
            return .object([("turns", .int(v.count)), ("failed", .int(failed[api] ?? 0)), ("median_ms", ms(median)),
                            ("p90_ms", ms(v.count >= 10 ? v[Int(Double(v.count) * 0.9) - 1] : nil)), ("min_ms", ms(v.first)), ("max_ms", ms(v.last))])
        }
        print(JSON.object([("realtime", summary("realtime")), ("live", summary("live"))]).description)
    }

    static func readFile(_ path: String) throws -> [UInt8] {
        guard let file = fopen(path, "rb") else { throw LoadFailure("cannot read \(path): \(String(cString: strerror(errno)))") }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while case let n = fread(&chunk, 1, chunk.count, file), n > 0 { bytes += chunk[0..<n] }
        return bytes
    }

    /// Bytes up to the end of the last 20 ms frame louder than -50 dBFS (RMS above 103).
    static func lastWordEnd(_ pcm: [UInt8]) -> Int {
        var end = 0
        var i = 0
        while i + frameBytes <= pcm.count {
            var sum = 0.0
            for j in stride(from: i, to: i + frameBytes, by: 2) {
                let sample = Double(Int16(bitPattern: UInt16(pcm[j]) | UInt16(pcm[j + 1]) << 8))
                sum += sample * sample
            }
            if (sum / Double(frameBytes / 2)).squareRoot() > 103 { end = i + frameBytes }
            i += frameBytes
        }
        return end
    }
}

/// One question on one session: its milliseconds from the last word to the reply's first audio.
final class LiveTurn: ConnectionEvents {
    private let live: Bool
    private let speech: [UInt8]
    private let timeout: Double
    private let pool: ConnectionPool
    private var ready = false
    private var firstAudio: UInt64?
    private var lost = false

    init(target: LoadTarget, live: Bool, speech: [UInt8], timeout: Double) throws(ClientSocket.Failure) {
        self.live = live
        self.speech = speech
        self.timeout = timeout
        pool = try ConnectionPool(.init(target: target, count: 1, firstIndex: 0, sources: 1, rate: 100, connectTimeout: min(timeout, 10)))
        pool.events = self
    }

    func opened(_ connection: ClientConnection, in pool: ConnectionPool) {
        let rate = LiveTurnsCommand.rate
        let event = live
            ? #"{"type":"session.start","session":{"model":"gpt-live-1","audio":{"format":{"type":"audio/pcm","rate":\#(rate)},"output":{"voice":"marin"}}}}"#
            : #"{"type":"session.update","session":{"type":"realtime","output_modalities":["audio"],"audio":{"input":{"format":{"type":"audio/pcm","rate":\#(rate)},"turn_detection":{"type":"semantic_vad","eagerness":"auto"}},"output":{"format":{"type":"audio/pcm","rate":\#(rate)},"voice":"marin"}}}}"#
        Array(event.utf8).withUnsafeBytes { pool.sendFrame(ClientFrame.text, $0, on: connection) }
    }

    func received(_ opcode: UInt8, _ payload: UnsafeRawBufferPointer, on connection: ClientConnection, in pool: ConnectionPool) {
        guard opcode == ClientFrame.text, let type = (try? JSON(parsing: String(decoding: payload, as: UTF8.self)))?["type"]?.string else { return }
        switch type {
        case "session.started", "session.updated": if type == (live ? "session.started" : "session.updated") { ready = true }
        case "session.output_audio.delta", "response.output_audio.delta": if firstAudio == nil { firstAudio = MonotonicClock.nanoseconds() }
        default: break
        }
    }

    func lost(_ connection: ClientConnection, reason: String, in pool: ConnectionPool) { lost = true }

    func run() -> Double? {
        defer { pool.closeAll() }
        let deadline = MonotonicClock.nanoseconds() + MonotonicClock.nanoseconds(timeout)
        while !ready && !lost && MonotonicClock.nanoseconds() < deadline && !(pool.settled && pool.open == 0) {
            pool.step(timeoutMilliseconds: 10)
        }
        guard ready, let connection = pool.openConnections.first else { return nil }
        let frameBytes = LiveTurnsCommand.frameBytes
        let audio = speech + [UInt8](repeating: 0, count: LiveTurnsCommand.rate * 2 * 4)
        let end = LiveTurnsCommand.lastWordEnd(speech)
        let append = live ? "session.input_audio.append" : "input_audio_buffer.append"
        let start = MonotonicClock.nanoseconds()
        let turnDeadline = start + MonotonicClock.nanoseconds(timeout)
        var saidAt: UInt64?
        var offset = 0
        while firstAudio == nil && !lost && MonotonicClock.nanoseconds() < turnDeadline {
            let now = MonotonicClock.nanoseconds()
            if offset < audio.count {
                let due = start + UInt64(offset) * 1_000_000_000 / UInt64(LiveTurnsCommand.rate * 2)
                if now >= due {
                    let frame = Array(audio[offset..<min(audio.count, offset + frameBytes)])
                    Array(#"{"type":"\#(append)","audio":"\#(Base64.encode(frame))"}"#.utf8).withUnsafeBytes { pool.sendFrame(ClientFrame.text, $0, on: connection) }
                    if saidAt == nil && offset + frameBytes >= end { saidAt = MonotonicClock.nanoseconds() }
                    offset += frameBytes
                    continue
                }
                pool.step(timeoutMilliseconds: Int32(max(1, min(20, (due - now) / 1_000_000))))
            } else {
                pool.step(timeoutMilliseconds: 20)
            }
        }
        guard let firstAudio, let saidAt else { return nil }
        return (Double(firstAudio) - Double(saidAt)) / 1e6
    }
}
