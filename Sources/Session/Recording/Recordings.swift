import Codec
import Loop
import Metrics
import Synchronization

/// Where calls are recorded (`--recordings DIR`), for how long (`--recording-retention-days`),
/// and the one thread that encodes them. Off unless the server is started with a directory, and
/// then only for sessions that ask (`recording: true`).
///
/// Encoding runs off the loops, on a thread of its own (a `WorkerPool` of one: a recording's
/// blocks are encoded in the order they were taken, with no lock per recording). Its queue is
/// bounded: a block that finds it full is dropped and counted, so a disk that cannot keep up costs
/// recordings a gap, never the loops' latency or unbounded memory.
public final class Recordings: Sendable {
    public let directory: String
    public let keepSeconds: Double
    /// One encoder thread; a queued block is a second of one call (64 KB at 16 kHz stereo), so
    /// 1,024 of them bound the queue at 64 MB.
    private let writer: WorkerPool
    let registry = MetricsRegistry()
    let active: MetricFamily
    let bytesWritten: MetricFamily
    let secondsRecorded: MetricFamily
    let blocksDropped: MetricFamily
    let failures: MetricFamily
    /// When the directory was last swept of expired recordings (wall seconds).
    private let lastSweep = Atomic<Int>(0)

    /// Once an hour: expiry is in days, and a sweep reads the whole directory.
    static let sweepSeconds = 3_600
    public static let defaultRetentionDays = 30.0

    public init(directory: String, retentionDays: Double = Recordings.defaultRetentionDays) throws(SystemError) {
        self.directory = directory
        keepSeconds = retentionDays * 86_400
        // Recordings are personal data: no one but the server's user reads them.
        try Sys.makeDirectory(directory, mode: 0o750)
        writer = try WorkerPool(name: "recorder", threads: 1, queueLimit: 1_024)
        active = MetricFamily(name: "parley_recordings_active", help: "Calls being recorded now.", kind: .gauge, registry: registry)
        bytesWritten = MetricFamily(name: "parley_recording_bytes_total", help: "Bytes of Ogg Opus written to recordings.", registry: registry)
        secondsRecorded = MetricFamily(name: "parley_recording_seconds_total", help: "Seconds of audio (both sides, as one stereo stream) recorded.", registry: registry)
        blocksDropped = MetricFamily(name: "parley_recording_blocks_dropped_total",
                                     help: "Seconds of recorded audio dropped because the recording thread's queue was full (a disk or CPU that cannot keep up).", registry: registry)
        failures = MetricFamily(name: "parley_recording_failures_total", help: "Recordings that could not be created or written (the session goes on unrecorded).",
                                registry: registry)
        sweepIfDue()
    }

    /// A new recording file for `sessionID` at `rate` (created on the recording thread with its
    /// first block).
    func begin(sessionID: String, rate: Int) -> RecordingFile {
        active.add(1)
        return RecordingFile(directory: directory, sessionID: sessionID, rate: rate)
    }

    /// Interleaved stereo for `file`, encoded and written on the recording thread.
    func write(_ stereo: [Int16], to file: RecordingFile) {
        guard !stereo.isEmpty else { return }
        let accepted = writer.submit { [self] in
            let written = file.append(stereo)
            if written < 0 { failures.add(1) } else { bytesWritten.add(written) }
        }
        if accepted { secondsRecorded.add(stereo.count / 2 / file.rate) } else { blocksDropped.add(1) }
    }

    /// The recording's last block and its end. A close that finds the queue full is not waited
    /// for (that would stall a loop): the file closes itself when the last job holding it is done.
    func finish(_ stereo: [Int16], _ file: RecordingFile) {
        active.add(-1)
        write(stereo, to: file)
        _ = writer.submit { [self] in
            if file.close() < 0 { failures.add(1) }
            sweepIfDue()
        }
    }

    /// The longest recording read back whole (`read`): a Live session's two hours at 32 kb/s are
    /// 29 MB with their Ogg pages.
    static let maxReadBytes = 48 << 20

    /// The recording `name` (a file in the directory), read on the recording thread, after the
    /// blocks queued before it (so a session's last page is in it); `done` on `loop` gets nil
    /// when it is missing, unreadable, or the thread's queue is full.
    func read(_ name: String, on loop: EventLoop, _ done: @escaping ([UInt8]?) -> Void) {
        guard !name.isEmpty, !name.contains("/"), !name.hasPrefix(".") else { return done(nil) }
        let path = "\(directory)/\(name)"
        if loop.offload(to: writer, { Sys.readFile(path, maxBytes: Self.maxReadBytes) }, then: done) == nil { done(nil) }
    }

    /// Removes recordings older than the retention (on the recording thread; at most once an hour).
    private func sweepIfDue() {
        let now = WallClock.seconds()
        let last = lastSweep.load(ordering: .relaxed)
        guard now - last >= Self.sweepSeconds, lastSweep.compareExchange(expected: last, desired: now, ordering: .relaxed).exchanged else { return }
        _ = writer.submit { [directory, keepSeconds] in
            for name in Directory.names(in: directory) where name.hasSuffix(".opus") {
                let path = "\(directory)/\(name)"
                if let written = Sys.modificationTime(path), Double(now) - written > keepSeconds { Sys.remove(path) }
            }
        }
    }
}
