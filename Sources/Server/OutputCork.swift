/// What the connections of one loop send while the loop handles one event, held back and written
/// when the event is done: one write per connection per event, however many frames its handler
/// sent in answer to one read, one batch of timers or one inbox delivery (uSockets calls this
/// corking, and uncorks as the handler returns). The loop's after-each-event hook calls
/// `flushAll`. Not at the end of the pass, as Redis writes in `beforeSleep`: measured, that held a
/// model's deltas for the rest of a busy pass (server-added latency at 10,000 sessions, mean 23 µs
/// to 512 µs; docs/benchmarks.md, "Corking").
///
/// The bytes wait in one arena per loop, not in the connections, so a connection gains no buffer
/// and the hot path no allocation: each corked connection owns one contiguous run of the arena,
/// appended to in place while it is the last to write, moved to the top when another connection
/// wrote in between (or, past `moveLimit`, written then). The list of runs is the loop's list of corked connections; a connection
/// knows its place in it (`corkIndex`), and nothing is kept for a connection with nothing pending.
///
/// Order is kept by one rule: a connection corks only while its outbound queue is empty; once the
/// socket has refused bytes, everything after them joins the queue, as before corking.
final class OutputCork {
    /// 64 KiB: at 2,000 connections × 50 frames/s, one event (a batch of timers, say) holds a few hundred small frames.
    static let arenaBytes = 64 * 1024
    /// A run written at once when it would grow past this: TLS's largest record, and uWebSockets'
    /// cork buffer. Larger writes are not corked at all (copying them would buy nothing).
    static let runLimit = 16 * 1024
    /// The longest run moved rather than written when another connection wrote after it.
    static let moveLimit = 1024

    private struct Run {
        let connection: Connection
        var start: Int
        var count: Int
    }

    private let arena: UnsafeMutableRawBufferPointer
    /// The arena's first free byte; everything below it belongs to a run or to a run that moved.
    private var top = 0
    /// The corked connections, in the order they first wrote in this event. A flushed run stays
    /// with `count` 0 until the flush, so that indexes held by connections stay valid.
    private var runs: [Run] = []

    init() {
        arena = .allocate(byteCount: Self.arenaBytes, alignment: 16)
    }

    deinit {
        arena.deallocate()
    }

    /// Holds `a` then `b` for `connection` until the event is done; false when they are not
    /// corked (too large, no room, or the connection's run must go out first), and the caller
    /// writes them itself after `flush`. Never writes to a socket itself.
    func hold(_ connection: Connection, _ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        let n = a.count + b.count
        guard n <= Self.runLimit else { return false }
        var index = Int(connection.corkIndex)
        if index >= 0 {
            let run = runs[index]
            let atTop = run.start + run.count == top
            // Another connection wrote since, if not at the top. A short run moves there, where it
            // can grow; a longer one goes out now, so that a handler writing to many sockets in
            // turn (a broadcast) costs at worst what it did before corking, and never a copy of
            // everything held so far at every frame. A run that would pass the limit goes out too.
            // After that write these bytes may have to queue behind what the socket refused, which
            // the caller sees to; the connection's next write starts a new run.
            if run.count + n > Self.runLimit || (!atTop && (run.count > Self.moveLimit || top + run.count + n > arena.count)) {
                return false
            } else if !atTop {
                (arena.baseAddress! + top).copyMemory(from: arena.baseAddress! + run.start, byteCount: run.count)
                runs[index].start = top
                top += run.count
            }
        }
        if index < 0 {
            guard top + n <= arena.count else { return false }
            index = runs.count
            runs.append(Run(connection: connection, start: top, count: 0))
            connection.corkIndex = Int32(index)
        } else if top + n > arena.count {
            return false
        }
        copy(a)
        copy(b)
        runs[index].count += n
        return true
    }

    private func copy(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        (arena.baseAddress! + top).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
        top += bytes.count
    }

    /// Writes what `connection` has corked now, ahead of whatever it writes next (a large frame,
    /// a close, a linger). Does nothing when it has nothing corked.
    func flush(_ connection: Connection) {
        let index = Int(connection.corkIndex)
        guard index >= 0 else { return }
        let run = runs[index]
        runs[index].count = 0
        connection.corkIndex = -1
        guard run.count > 0 else { return }
        connection.writeNow(UnsafeRawBufferPointer(rebasing: arena[run.start..<(run.start + run.count)]),
                            UnsafeRawBufferPointer(start: nil, count: 0))
    }

    /// The event is done: every corked connection's run, one write each, in the order they first
    /// wrote. A write that fails closes its connection, whose handler may write to others: their
    /// runs join the list and go out in this same call.
    func flushAll() {
        guard !runs.isEmpty else { return }
        var i = 0
        while i < runs.count {
            let connection = runs[i].connection
            i += 1
            if connection.corkIndex == Int32(i - 1) { flush(connection) }
        }
        runs.removeAll(keepingCapacity: true)
        top = 0
    }
}
