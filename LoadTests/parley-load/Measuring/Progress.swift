import Loop
#if canImport(Glibc)
import Glibc
#endif

/// The live status line on stderr. On a terminal it is redrawn in place with `\r` a few times a
/// second; into a file or pipe it is written as ordinary lines once a second, so logs stay readable.
final class Progress {
    private let interactive = isatty(2) != 0
    private var lastDrawn: UInt64 = 0
    private var drawnSomething = false
    private let interval: UInt64

    init() {
        interval = interactive ? 200_000_000 : 1_000_000_000
    }

    /// Shows `line` unless one was shown less than an interval ago (`force` shows it regardless).
    func update(_ line: @autoclosure () -> String, force: Bool = false) {
        let now = MonotonicClock.nanoseconds()
        guard force || now - lastDrawn >= interval else { return }
        lastDrawn = now
        drawnSomething = true
        // ESC [ K clears what a longer previous line left to the right.
        Console.error(interactive ? "\r\(line())\u{1B}[K" : "\(line())\n")
    }

    /// Ends the redrawn line so that what follows starts on a fresh one.
    func finish() {
        if interactive && drawnSomething { Console.error("\n") }
        drawnSomething = false
    }
}
