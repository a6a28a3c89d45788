import Loop
#if canImport(Glibc)
import Glibc
#endif

/// The voice test in one process: N sessions on `/ws`, of which K stream Opus at real-time cadence
/// (one 20 ms packet every 20 ms, looping a real speech recording), so the server decodes, resamples
/// and runs every frame through VAD and turn-taking. The others stay idle. The client times its own
/// sends against the schedule; the server's lag behind real time comes from its /metrics.
///
/// With `calls`, the sessions are phone calls on a Twilio Media Streams endpoint instead: each
/// announces itself (`connected`, `start`) when it opens, and every call streams a JSON `media`
/// message every 20 ms, as a carrier does whether anyone speaks or not: K of them the recording,
/// the rest silence.
final class VoiceRun: ConnectionEvents {
    struct Settings {
        let target: LoadTarget
        let sessions: Int
        let speaking: Int
        let packets: [[UInt8]]
        let connectTimeout: Double
        let sources: Int
        var calls: Calls?
    }

    /// What makes the sessions phone calls: the messages that open one, and the silence the
    /// callers who are not speaking stream.
    struct Calls {
        let opening: (Int) -> [[UInt8]]
        let silence: [UInt8]
    }

    /// One streaming session's place in its recording (or silence) and in time.
    private struct Speaker {
        let connection: ClientConnection
        let silent: Bool
        var packet: Int
        var due: UInt64
    }

    static let frameNanoseconds: UInt64 = 20_000_000
    static let connectRate = 5000.0

    private let settings: Settings
    let pool: ConnectionPool
    private var speakers: [Speaker] = []
    private var created = Set<Int>()
    /// How late each send was against its slot in the schedule, while measuring.
    private(set) var sendLateness = LatencyRecorder()
    private(set) var framesSent = 0
    /// Frames sent while measuring: one lateness each.
    var framesSentMeasuring: Int { Int(sendLateness.count) }
    private(set) var speechStarted = 0
    private(set) var speechStopped = 0
    private(set) var responsesDone = 0
    private(set) var errors = 0
    private var measuring = false

    init(_ settings: Settings) throws(ClientSocket.Failure) {
        self.settings = settings
        pool = try ConnectionPool(.init(
            target: settings.target, count: settings.sessions, firstIndex: 0, sources: settings.sources,
            rate: Self.connectRate, connectTimeout: settings.connectTimeout))
        pool.events = self
    }

    var ready: Int { created.count }

    // MARK: Phases

    /// Until every session has said session.created, or the connect deadline.
    func connect(progress: Progress) {
        let deadline = MonotonicClock.nanoseconds() + MonotonicClock.nanoseconds(settings.connectTimeout)
        while MonotonicClock.nanoseconds() < deadline && !(pool.settled && ready == pool.open) {
            pool.step(timeoutMilliseconds: 10)
            progress.update("connecting  \(Format.grouped(ready))/\(Format.grouped(settings.sessions)) sessions ready")
        }
    }

    /// Picks the speakers among the ready sessions, spread evenly over one frame's time and
    /// starting at random places in the recording, so that their sends do not come in bursts.
    func startSpeakers() {
        let now = MonotonicClock.nanoseconds()
        var random = FastRandom()
        let ready = pool.openConnections.filter { created.contains($0.slot) }
        let streaming = settings.calls == nil ? Array(ready.prefix(settings.speaking)) : ready
        for (i, connection) in streaming.enumerated() {
            let phase = Self.frameNanoseconds * UInt64(i) / UInt64(max(1, streaming.count))
            speakers.append(Speaker(connection: connection, silent: i >= settings.speaking,
                                    packet: Int(random.next() % UInt64(settings.packets.count)), due: now + phase))
        }
        speaking = min(settings.speaking, speakers.count)
        streams = speakers.count
    }

    private(set) var speaking = 0
    /// Sessions sending a frame every 20 ms: the speakers, and for calls the silent ones too.
    private(set) var streams = 0

    /// The speakers fall silent (the sessions stay open).
    func stopSpeaking() { speakers.removeAll() }

    /// Streams until `end`, or until `stop` says so; `measuring` counts what is sent and heard.
    func stream(until end: UInt64, measuring: Bool, progress: Progress, stop: () -> Bool = { false }) {
        self.measuring = measuring
        var nextProgress: UInt64 = 0
        while true {
            let now = MonotonicClock.nanoseconds()
            guard now < end, !stop() else { break }
            sendDue(now)
            pool.step(timeoutMilliseconds: 1)
            if now >= nextProgress {
                nextProgress = now + 500_000_000
                progress.update("\(measuring ? "measuring" : "warm-up  ")  \(Format.grouped(speakers.count)) streaming of \(Format.grouped(pool.open)) open  \(Format.grouped(framesSent)) frames sent  speech stopped \(Format.grouped(speechStopped))  errors \(errors)")
            }
        }
    }

    /// Sends every frame whose time has come.
    private func sendDue(_ now: UInt64) {
        for i in speakers.indices where speakers[i].due <= now {
            let speaker = speakers[i]
            guard speaker.connection.isOpen else { continue }
            if let calls = settings.calls {
                (speaker.silent ? calls.silence : settings.packets[speaker.packet]).withUnsafeBytes { pool.sendFrame(ClientFrame.text, $0, on: speaker.connection) }
            } else {
                settings.packets[speaker.packet].withUnsafeBytes { pool.sendFrame(ClientFrame.binary, $0, on: speaker.connection) }
            }
            framesSent += 1
            if measuring { sendLateness.record(now - speaker.due) }
            speakers[i].packet = (speaker.packet + 1) % settings.packets.count
            speakers[i].due += Self.frameNanoseconds
        }
    }

    // MARK: Events

    /// A call is ready once it has said who it is; a Realtime session when it says session.created.
    func opened(_ connection: ClientConnection, in pool: ConnectionPool) {
        guard let calls = settings.calls else { return }
        for message in calls.opening(connection.slot) { message.withUnsafeBytes { pool.sendFrame(ClientFrame.text, $0, on: connection) } }
        created.insert(connection.slot)
    }

    func received(_ opcode: UInt8, _ payload: UnsafeRawBufferPointer, on connection: ClientConnection, in pool: ConnectionPool) {
        guard opcode == ClientFrame.text else { return }
        switch RealtimeEventKind.of(payload) {
        case .sessionCreated: created.insert(connection.slot)
        case .speechStarted: if measuring { speechStarted += 1 }
        case .speechStopped: if measuring { speechStopped += 1 }
        case .responseDone: if measuring { responsesDone += 1 }
        case .error: errors += 1
        default: break
        }
    }

    func lost(_ connection: ClientConnection, reason: String, in pool: ConnectionPool) {
        created.remove(connection.slot)
    }
}
