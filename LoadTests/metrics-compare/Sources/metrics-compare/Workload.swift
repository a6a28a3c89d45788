/// What Parley's code does to its metrics over one Realtime session's life, as calls a side
/// implements with its own metric objects. `loop` is the event loop (0 or 1) the session lives on:
/// Parley keeps the server's counters per loop, the session and speech series process-wide.
protocol MetricsSide: Sendable {
    var name: String { get }
    /// Upgrade accepted (over TLS): accepted, TLS handshake ok, connections open, sessions open,
    /// accounted bytes.
    func opened(loop: Int, endpoint: Int)
    /// One audio frame in: a WebSocket message and its bytes, the frame processed, its lag, and the
    /// loop iteration that handled it.
    func audioFrame(loop: Int, bytes: Int, lagNanoseconds: UInt64, iterationNanoseconds: UInt64)
    /// End of the user's speech: a recogniser lent and returned, recognition's real-time factor,
    /// transcription and turn-taking latencies.
    func speechStopped(loop: Int, recognitionRTF: Double, transcriptionNanoseconds: UInt64, toResponseNanoseconds: UInt64)
    /// response.created: a turn.
    func responseCreated(loop: Int)
    /// The upstream model's first token.
    func firstToken(loop: Int, nanoseconds: UInt64)
    /// One upstream delta relayed: Parley's added latency, a message and its bytes out, the loop
    /// iteration.
    func delta(loop: Int, bytes: Int, addedNanoseconds: UInt64, iterationNanoseconds: UInt64)
    /// The reply's audio: synthesis and encoding real-time factors, voice-to-voice latency.
    func replyAudio(loop: Int, synthesisRTF: Double, encodingRTF: Double, voiceToVoiceNanoseconds: UInt64)
    /// response.done with a status (index into `statuses`).
    func responseDone(loop: Int, status: Int)
    /// The connection closed with a close code (index into `closeCodes`).
    func closed(loop: Int, endpoint: Int, code: Int)

    /// The /metrics body.
    func scrape() -> String

    // The single operations, for ns per observation.
    func counterAdd()
    func labelledCounterAdd()
    func histogramObserve(nanoseconds: UInt64)
}

let statuses = ["completed", "cancelled", "failed", "incomplete"]
/// The close codes the simulation uses, as Parley's label values; 1000 first (Parley always
/// renders it).
let closeCodes = ["1000", "1001", "1006"]
/// Parley's CloseLabel index of each of `closeCodes`.
let closeCodeIndex = [0, 1, 6]
let endpointNames = ["http", "realtime", "ws"]
let refusalReasons = ["descriptor_limit", "connection_limit", "tls_handshake_limit"]
let tlsResults = ["ok", "failed", "timeout", "closed"]

/// What /proc would say at scrape time: constants here on every side, so that the scrape measures
/// the writer, not procfs.
enum ProcessFigures {
    static let resident = 812_345_344
    static let proportional = 798_000_128
    static let cpuSeconds = 1234.56
    static let startupResident = 41_943_040
    static let certificateNotAfter = 1_798_761_600
    static let speechQueueDepth = 3
    static let speechWorkersBusy = 2
}

struct Shape {
    /// Turns per session; audio frames per turn; upstream deltas per turn.
    var turns = 3
    var framesPerTurn = 25
    var deltasPerTurn = 8

    /// Metric operations one session makes (counter adds + histogram observations).
    var counterOps: Int { 5 + turns * (framesPerTurn * 3 + 2 + 1 + deltasPerTurn * 2 + 1) + 4 }
    var histogramOps: Int { turns * (framesPerTurn * 2 + 3 + 1 + deltasPerTurn * 2 + 3) }
}

/// Sessions `range` on `loop`, one after another, as Parley's loops would run them (interleaved
/// sessions would make the same calls).
@inline(never)
func simulate<S: MetricsSide>(_ side: S, sessions range: Range<Int>, loop: Int, shape: Shape) {
    var random = Random(seed: UInt64(loop + 1) &* 0x1234_5678_9ABC_DEF1)
    for session in range {
        let endpoint = 1 + session % 2
        side.opened(loop: loop, endpoint: endpoint)
        for _ in 0..<shape.turns {
            for _ in 0..<shape.framesPerTurn {
                side.audioFrame(loop: loop, bytes: 160 + Int(random.next() % 200),
                                lagNanoseconds: random.nanoseconds(20_000, 6_000_000),
                                iterationNanoseconds: random.nanoseconds(20_000, 400_000))
            }
            side.speechStopped(loop: loop, recognitionRTF: 0.05 + random.unit() * 0.5,
                               transcriptionNanoseconds: random.nanoseconds(50_000_000, 900_000_000),
                               toResponseNanoseconds: random.nanoseconds(2_000_000, 400_000_000))
            side.responseCreated(loop: loop)
            side.firstToken(loop: loop, nanoseconds: random.nanoseconds(80_000_000, 2_500_000_000))
            for _ in 0..<shape.deltasPerTurn {
                side.delta(loop: loop, bytes: 80 + Int(random.next() % 400),
                           addedNanoseconds: random.nanoseconds(15_000, 600_000),
                           iterationNanoseconds: random.nanoseconds(20_000, 400_000))
            }
            side.replyAudio(loop: loop, synthesisRTF: 0.02 + random.unit() * 0.3, encodingRTF: 0.005 + random.unit() * 0.05,
                            voiceToVoiceNanoseconds: random.nanoseconds(300_000_000, 3_000_000_000))
            let r = random.next() % 20
            side.responseDone(loop: loop, status: r < 17 ? 0 : r < 19 ? 1 : 2)
        }
        let c = random.next() % 10
        side.closed(loop: loop, endpoint: endpoint, code: c < 7 ? 0 : c < 9 ? 1 : 2)
    }
}
