import Synchronization
import Loop
#if canImport(Glibc)
import Glibc
#endif

/// A /metrics scrape on its own thread, so that a load loop with a schedule to keep (voice's 20 ms
/// frames) does not stop for it. Start it, keep working, and take the result once it is done.
final class BackgroundFetch {
    /// What the scraping thread and the caller share.
    private final class Outcome: Sendable {
        let metrics = Mutex<ServerMetrics?>(nil)
        let finished = Atomic<Bool>(false)
    }

    private let outcome = Outcome()
    private let thread: pthread_t?

    init(_ target: LoadTarget) {
        let outcome = self.outcome
        thread = try? Thread.spawn(name: "parley-load-scrape") {
            let metrics = try? ServerMetrics.fetch(from: target, timeoutSeconds: 30)
            outcome.metrics.withLock { $0 = metrics }
            outcome.finished.store(true, ordering: .releasing)
        }
        if thread == nil { outcome.finished.store(true, ordering: .releasing) }
    }

    var isDone: Bool { outcome.finished.load(ordering: .acquiring) }

    /// Waits for the scrape (it is bounded by its own time-out) and returns it.
    func take() -> ServerMetrics? {
        if let thread { pthread_join(thread, nil) }
        return outcome.metrics.withLock { $0 }
    }
}

/// The server's resident memory for a live progress line: from /proc for a server given by pid,
/// else from /metrics every two seconds on a background scrape, so the line never waits for it.
final class ServerMemoryMeter {
    private let target: LoadTarget
    private let figures: ProcessFigures?
    private var scrape: BackgroundFetch?
    private var lastStarted: UInt64 = 0
    private var shown = ""

    init(target: LoadTarget, pid: Int32?) {
        self.target = target
        figures = pid.map(ProcessFigures.init)
    }

    /// "  server RSS 123 MiB", or nothing until a first figure has come.
    func line() -> String {
        if let figures {
            return figures.residentBytes.map { "  server RSS \(Format.bytes($0))" } ?? ""
        }
        let now = MonotonicClock.nanoseconds()
        if let pending = scrape, pending.isDone {
            if let metrics = pending.take() { shown = "  server RSS \(Format.bytes(metrics.residentBytes))" }
            scrape = nil
        } else if scrape == nil && now - lastStarted >= 2_000_000_000 {
            scrape = BackgroundFetch(target)
            lastStarted = now
        }
        return shown
    }

    /// Waits for a scrape still under way (bounded by its time-out).
    func finish() {
        _ = scrape?.take()
        scrape = nil
    }
}
