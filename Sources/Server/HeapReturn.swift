/// When a loop gives freed memory back to the system (`Sys.trimHeap`, glibc's `malloc_trim`).
///
/// glibc returns a heap's free pages by itself only from the top of an arena; the connections of
/// a wave are spread through it, so once they close their pages stay resident. Measured with 15,000
/// connections on one loop (`parley-load hold`, docs/benchmarks.md): RSS rose from 26.0 to 69.4 MB
/// and stayed at 69.4 after every connection closed; `malloc_trim(0)` took it to 27.4 MB.
///
/// The rule, a value so it is a unit test: a trim is due once at least `wave` connections have
/// closed since the most open at a time, and at most half of that peak is left, or the last of at
/// least `idleWave` has closed; it runs a little
/// later (`delaySeconds`), so that the rest of the wave is covered by the same trim, and the peak
/// then starts again from what is open.
struct HeapReturn: Sendable {
    /// Closes that make a wave: a trim walks every arena (milliseconds with tens of megabytes
    /// free), not worth it for the coming and going of a few connections.
    static let wave = 1_000
    /// A loop left with no connection after at least this many at once is trimmed too: the
    /// smaller wave's pages stay resident otherwise (make chaos, 100 sessions a node: 21 MB at
    /// the start, 35 MB once every session had ended), and an idle loop's trim is cheap.
    static let idleWave = 64
    static let delaySeconds = 2.0

    private(set) var peak = 0
    private(set) var pending = false

    mutating func opened(open: Int) {
        peak = max(peak, open)
    }

    /// A connection closed, leaving `open`: whether a trim should be scheduled now.
    mutating func closed(open: Int) -> Bool {
        let wave = peak - open >= Self.wave && open <= peak / 2
        let idle = open == 0 && peak >= Self.idleWave
        guard !pending, wave || idle else { return false }
        pending = true
        return true
    }

    /// The trim ran, with `open` connections left.
    mutating func trimmed(open: Int) {
        pending = false
        peak = open
    }
}
