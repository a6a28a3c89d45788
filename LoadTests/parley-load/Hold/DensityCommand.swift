import ArgumentParser
import JSON
import Loop
#if canImport(Glibc)
import Glibc
#endif

/// `parley-load density KIND N`: N sessions of one kind held on a server while a script reads the
/// server's figures from outside (scripts/benchmarks/bench-density.sh, bench-live.sh).
struct DensityCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "density",
        abstract: "Hold N sessions of one kind (text, mic, room; live-text, live-mic on GPT-Live) for a script that reads the server's cost.",
        discussion: """
            `text` sessions open /v1/realtime and send nothing. `mic` sessions are a live microphone \
            with no speech: a 20 ms pcm16 24 kHz frame of faint noise (about -66 dBFS) every 20 ms as \
            `input_audio_buffer.append`; `room` the same with a room's noise (about -46 dBFS, loud enough \
            that every window goes to the VAD model). `live-text` and `live-mic` are the same on \
            GPT-Live's /v1/live/sessions, each session started with `session.start` (audio/pcm at \
            24 kHz), its frames as `session.input_audio.append`. Once every session has opened (or \
            failed), streams for --seconds, prints one JSON line (kind, opened, refused, frames, \
            client_cpu_seconds, seconds), then keeps the sessions open until its standard input \
            closes, so that the caller reads the server's figures with them held.
            """)

    enum Kind: String, ExpressibleByArgument, CaseIterable {
        case text, mic, room, liveText = "live-text", liveMic = "live-mic"

        var live: Bool { self == .liveText || self == .liveMic }
        var streams: Bool { self == .mic || self == .room || self == .liveMic }
    }

    @Argument(help: "text, mic, room, live-text or live-mic.")
    var kind: Kind

    @Argument(help: "Sessions to open and hold (one process).")
    var count: Int

    @Option(help: "The server's base URL; the path comes from the kind. Loopback addresses only.")
    var url = "ws://127.0.0.1:8080"

    @Option(help: "Seconds to stream once the sessions are open.")
    var seconds = 20.0

    @Option(help: "Connections started per second.")
    var rate = 500.0

    @Option(help: "Seconds allowed for every session to open.")
    var connectTimeout = 60.0

    @Option(help: "Source addresses to connect from: 127.0.0.2 up to 127.0.0.(1 + K).")
    var sources = 16

    @Option(help: "PEM CA certificates trusted for a wss:// URL, besides the system store.")
    var ca: String?

    func validate() throws {
        guard (1...19_000).contains(count) else { throw ValidationError("N must be 1...19000 (one client process)") }
        guard seconds > 0, seconds <= 86_400 else { throw ValidationError("--seconds must be in (0, 86400]") }
        guard rate > 0 else { throw ValidationError("--rate must be positive") }
        guard (1...253).contains(sources) else { throw ValidationError("--sources must be 1...253") }
    }

    func run() throws {
        signal(SIGPIPE, SIG_IGN)
        DescriptorLimit.raiseToHard()
        let base = url.hasSuffix("/") ? String(url.dropLast()) : url
        let target = try LoadTarget(base + (kind.live ? "/v1/live/sessions" : "/v1/realtime"), caFile: ca)
        let run = try DensityRun(kind: kind, frames: Self.noiseFrames(kind),
                                 plan: .init(target: target, count: count, firstIndex: 0, sources: sources, rate: rate, connectTimeout: connectTimeout))
        run.openAll()
        let cpu = CPUTime.ofSelf()
        let started = MonotonicClock.nanoseconds()
        run.stream(seconds: seconds)
        let held = MonotonicClock.seconds(since: started)
        let line: JSON = .object([
            ("kind", .string(kind.rawValue)), ("opened", .int(run.pool.connected)), ("refused", .int(run.pool.failedCount)),
            ("refusals", .counts(run.pool.failed)), ("dropped", .int(run.pool.droppedCount)), ("frames", .int(run.framesSent)),
            ("client_cpu_seconds", .number(((CPUTime.ofSelf() - cpu).total * 100).rounded() / 100)),
            ("seconds", .number((held * 10).rounded() / 10)),
        ])
        print(line.description)
        Console.flush()
        run.holdUntilStandardInputCloses()
        run.pool.closeAll()
    }

    /// 50 different `append` events of noise (seeded: the same every run), each 20 ms of pcm16 at 24 kHz.
    static func noiseFrames(_ kind: Kind) -> [[UInt8]] {
        var random = FastRandom(seed: 7)
        let level: Int16 = kind == .room ? 300 : 30
        let type = kind.live ? "session.input_audio.append" : "input_audio_buffer.append"
        return (0..<50).map { _ in
            var pcm: [UInt8] = []
            pcm.reserveCapacity(960)
            for _ in 0..<480 {
                let sample = Int16(truncatingIfNeeded: Int(random.next() % UInt64(2 * Int(level) + 1)) - Int(level))
                let bits = UInt16(bitPattern: sample)
                pcm += [UInt8(bits & 0xFF), UInt8(bits >> 8)]
            }
            return Array(#"{"type":"\#(type)","audio":"\#(Base64.encode(pcm))"}"#.utf8)
        }
    }

    static let sessionStart = Array(#"{"type":"session.start","session":{"model":"gpt-live-1","audio":{"format":{"type":"audio/pcm","rate":24000}}}}"#.utf8)
}

/// The sessions of one `density` run, on one connection pool.
final class DensityRun: ConnectionEvents {
    let kind: DensityCommand.Kind
    let frames: [[UInt8]]
    let pool: ConnectionPool
    private(set) var framesSent = 0
    private let progress = Progress()

    init(kind: DensityCommand.Kind, frames: [[UInt8]], plan: ConnectionPool.Plan) throws(ClientSocket.Failure) {
        self.kind = kind
        self.frames = frames
        pool = try ConnectionPool(plan)
        pool.events = self
    }

    func opened(_ connection: ClientConnection, in pool: ConnectionPool) {
        if kind.live { DensityCommand.sessionStart.withUnsafeBytes { pool.sendFrame(ClientFrame.text, $0, on: connection) } }
    }

    /// Until every connection has opened or failed (the pool's connect timeout bounds it).
    func openAll() {
        while !pool.settled {
            pool.step(timeoutMilliseconds: 10)
            progress.update("connecting  \(Format.grouped(pool.connected))/\(Format.grouped(pool.plan.count))  failed \(Format.grouped(pool.failedCount))")
        }
        progress.finish()
    }

    /// A frame to every open session every 20 ms (for the kinds that stream), replies read and dropped.
    func stream(seconds: Double) {
        let start = MonotonicClock.nanoseconds()
        let end = start + MonotonicClock.nanoseconds(seconds)
        var tick: UInt64 = 0
        while true {
            let now = MonotonicClock.nanoseconds()
            guard now < end else { break }
            let due = start + tick * 20_000_000
            if now >= due {
                if kind.streams {
                    for (n, connection) in pool.openConnections.enumerated() {
                        frames[(Int(tick) + n) % frames.count].withUnsafeBytes { pool.sendFrame(ClientFrame.text, $0, on: connection) }
                        framesSent += 1
                    }
                }
                tick += 1
                continue
            }
            pool.step(timeoutMilliseconds: Int32(max(1, min(20, (due - now) / 1_000_000))))
        }
    }

    /// Keeps the sessions open (answering pings) until standard input reaches its end.
    func holdUntilStandardInputCloses() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            var entry = pollfd(fd: 0, events: Int16(POLLIN), revents: 0)
            if poll(&entry, 1, 0) > 0 {
                let n = buffer.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
                if n <= 0 && !(n < 0 && errno == EINTR) { return }
            }
            pool.step(timeoutMilliseconds: 100)
        }
    }
}
