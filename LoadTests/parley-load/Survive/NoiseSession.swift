import JSON
import Loop
#if canImport(Glibc)
import Glibc
#endif

/// Endless 20 ms chunks (480 samples of pcm16 at 24 kHz) of one kind of bad input, for `noise`.
struct NoiseAudio {
    static let rate = 24_000
    static let chunk = 480

    enum Kind: String, CaseIterable { case quiet, noise, mmhmm }

    private let kind: Kind
    private var loop: [Int16] = []
    private var position = 0
    private var clips: [[Int16]] = []
    private var order: [Int] = []
    private var pending: [Int16] = []
    private var random: FastRandom

    init(_ kind: Kind, seed: UInt64, clipsFolder: String) throws {
        self.kind = kind
        random = FastRandom(seed: seed)
        switch kind {
        case .quiet: break
        case .noise: loop = Self.noise(seed: seed)
        case .mmhmm:
            let names = Directory.names(in: clipsFolder).filter { $0.hasSuffix(".raw") }.sorted()
            guard !names.isEmpty else { throw LoadFailure("no .raw clips in \(clipsFolder)") }
            clips = try names.map { name in
                let bytes = try LiveTurnsCommand.readFile(clipsFolder + "/" + name)
                return stride(from: 0, to: bytes.count - 1, by: 2).map { Int16(bitPattern: UInt16(bytes[$0]) | UInt16(bytes[$0 + 1]) << 8) }
            }
        }
    }

    /// The next 20 ms.
    mutating func next() -> [Int16] {
        switch kind {
        case .quiet:
            return [Int16](repeating: 0, count: Self.chunk)
        case .noise:
            let out = Array(loop[position..<(position + Self.chunk)])
            position = (position + Self.chunk) % loop.count
            return out
        case .mmhmm:
            while pending.count < Self.chunk {
                if order.isEmpty {
                    order = Array(clips.indices)
                    order.shuffle(using: &random)
                }
                pending += clips[order.removeFirst()]
                // 1 to 3 s of silence after each clip.
                let silence = Int(Double(Self.rate) * (1.0 + 2.0 * Double(random.next() >> 11) / Double(1 << 53)))
                pending += [Int16](repeating: 0, count: silence)
            }
            let out = Array(pending.prefix(Self.chunk))
            pending.removeFirst(Self.chunk)
            return out
        }
    }

    /// `seconds` of white noise, then as long of pink (Paul Kellet's filter), both at `dbfs` RMS;
    /// seeded, so every run streams the same (a whole number of chunks long).
    static func noise(seed: UInt64, seconds: Int = 30, dbfs: Double = -30) -> [Int16] {
        var random = FastRandom(seed: seed)
        func gauss() -> Double {
            // Box-Muller.
            let u1 = max(Double(random.next() >> 11) / Double(1 << 53), 1e-300)
            let u2 = Double(random.next() >> 11) / Double(1 << 53)
            return (-2 * log(u1)).squareRoot() * cos(2 * Double.pi * u2)
        }
        let n = rate * seconds
        let white = (0..<n).map { _ in gauss() }
        var pink: [Double] = []
        pink.reserveCapacity(n)
        var b = [Double](repeating: 0, count: 7)
        for _ in 0..<n {
            let w = gauss()
            b[0] = 0.99886 * b[0] + w * 0.0555179
            b[1] = 0.99332 * b[1] + w * 0.0750759
            b[2] = 0.96900 * b[2] + w * 0.1538520
            b[3] = 0.86650 * b[3] + w * 0.3104856
            b[4] = 0.55000 * b[4] + w * 0.5329522
            b[5] = -0.7616 * b[5] - w * 0.0168980
            pink.append(b[0] + b[1] + b[2] + b[3] + b[4] + b[5] + b[6] + w * 0.5362)
            b[6] = w * 0.115926
        }
        let target = 32768 * pow(10, dbfs / 20)
        var out: [Int16] = []
        out.reserveCapacity(2 * n)
        for part in [white, pink] {
            let scale = target / (part.reduce(0) { $0 + $1 * $1 } / Double(part.count)).squareRoot()
            out += part.map { Int16(max(-32768, min(32767, ($0 * scale).rounded()))) }
        }
        return out
    }
}

/// One Realtime session of `noise` streaming one kind; counts what the server says back, and at
/// the end asks a typed question out of band, which it must answer.
final class NoiseSession: ConnectionEvents {
    let kind: NoiseAudio.Kind
    private var audio: NoiseAudio
    private let pool: ConnectionPool
    private let log: UnsafeMutablePointer<FILE>?
    private let t0 = MonotonicClock.nanoseconds()
    private var streamStart: UInt64?
    private var sent: UInt64 = 0

    private(set) var counts: [String: Int] = [:]
    private(set) var userWords: [String] = []
    private(set) var replies: [(status: String, text: String)] = []
    private(set) var errors: [String] = []
    private(set) var audioMs = 0.0
    private(set) var closed: String?
    private(set) var answered: String?
    private var active: String?
    private var lastText = ""

    enum Phase { case streaming, cancelling(UInt64), probing(UInt64), done }
    private(set) var phase = Phase.streaming

    init(_ kind: NoiseAudio.Kind, audio: NoiseAudio, port: Int, out: String) throws {
        self.kind = kind
        self.audio = audio
        pool = try ConnectionPool(.init(target: try LoadTarget("ws://127.0.0.1:\(port)/v1/realtime"), count: 1, firstIndex: 0, sources: 1, rate: 100, connectTimeout: 30))
        log = fopen("\(out)/events-\(kind.rawValue).jsonl", "w")
        pool.events = self
    }

    deinit { if let log { fclose(log) } }

    private var connection: ClientConnection? { pool.openConnections.first }

    private func send(_ text: String) {
        guard let connection else { return }
        Array(text.utf8).withUnsafeBytes { pool.sendFrame(ClientFrame.text, $0, on: connection) }
    }

    func opened(_ connection: ClientConnection, in pool: ConnectionPool) {
        send(#"{"type":"session.update","session":{"type":"realtime","output_modalities":["audio"],"audio":{"input":{"format":{"type":"audio/pcm","rate":24000},"turn_detection":{"type":"semantic_vad"}},"output":{"format":{"type":"audio/pcm","rate":24000}}}}}"#)
        streamStart = MonotonicClock.nanoseconds()
    }

    func lost(_ connection: ClientConnection, reason: String, in pool: ConnectionPool) {
        if closed == nil { closed = "the connection ended: \(reason)" }
    }

    func received(_ opcode: UInt8, _ payload: UnsafeRawBufferPointer, on connection: ClientConnection, in pool: ConnectionPool) {
        guard opcode == ClientFrame.text, let event = try? JSON(parsing: String(decoding: payload, as: UTF8.self)) else { return }
        let type = event["type"]?.string ?? "?"
        counts[type, default: 0] += 1
        if !type.hasSuffix(".delta"), let log, payload.count > 1, payload[0] == UInt8(ascii: "{") {
            let t = Double(MonotonicClock.nanoseconds() - t0) / 1e9
            fputs("{\"t\":\(Format.fixed(t, 3)),", log)
            fwrite(payload.baseAddress! + 1, 1, payload.count - 1, log)
            fputs("\n", log)
        }
        switch type {
        case "response.output_audio.delta":
            audioMs += Double((event["delta"]?.string ?? "").utf8.count) * 3 / 4 / 2 / Double(NoiseAudio.rate) * 1000
        case "conversation.item.input_audio_transcription.completed":
            userWords.append(event["transcript"]?.string ?? "")
        case "response.created":
            active = event["response"]?["id"]?.string ?? "?"
        case "response.output_audio_transcript.done":
            lastText = event["transcript"]?.string ?? ""
        case "response.output_text.done":
            lastText = event["text"]?.string ?? ""
        case "response.done":
            active = nil
            let response = event["response"]
            let status = response?["status"]?.string ?? "?"
            if response?["metadata"]?["probe"] != nil {
                answered = status == "completed" ? "yes" : "status \(status)"
                phase = .done
            } else {
                let why = response?["status_details"]?["reason"]?.string
                replies.append((status + (why.map { " (\($0))" } ?? ""), String(lastText.prefix(60))))
            }
        case "error":
            errors.append(event["error"]?["code"]?.string ?? "null")
        default: break
        }
    }

    /// Sends the frames due, reads what came; returns when the next frame is due.
    func step() -> UInt64 {
        pool.step(timeoutMilliseconds: 0)
        if closed == nil && pool.failedCount > 0 { closed = "could not open: \(Format.reasons(pool.failed))" }
        let now = MonotonicClock.nanoseconds()
        switch phase {
        case .streaming:
            guard let start = streamStart, closed == nil else { return now + 20_000_000 }
            while start + sent * 20_000_000 <= MonotonicClock.nanoseconds() {
                let bytes = audio.next().withUnsafeBytes { Array($0) }
                send(#"{"type":"input_audio_buffer.append","audio":"\#(Base64.encode(bytes))"}"#)
                sent += 1
            }
            return start + sent * 20_000_000
        case .cancelling(let until):
            if active == nil || now >= until { probe() }
        case .probing(let until):
            if now >= until {
                answered = answered ?? "no response.done within 30 s"
                phase = .done
            }
        case .done: break
        }
        if closed != nil { phase = .done }
        return now + 10_000_000
    }

    /// The audio stops; the typed question follows (after a reply in progress is cancelled).
    func stop() {
        guard case .streaming = phase else { return }
        guard closed == nil else { phase = .done; return }
        if active != nil {
            send(#"{"type":"response.cancel"}"#)
            phase = .cancelling(MonotonicClock.nanoseconds() + 10_000_000_000)
        } else {
            probe()
        }
    }

    private func probe() {
        send(#"{"type":"response.create","response":{"conversation":"none","output_modalities":["text"],"metadata":{"probe":"1"},"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"What is 2 plus 2?"}]}]}}"#)
        phase = .probing(MonotonicClock.nanoseconds() + 30_000_000_000)
    }

    var isDone: Bool { if case .done = phase { true } else { false } }

    func close() { pool.closeAll() }
}
