import Loop
#if canImport(Glibc)
import Glibc
#endif

/// `parley serve --test-clock PATH` (issue 50): the server's one loop runs on a `ManualClock`, and
/// a test moves it through the Unix socket at PATH, a line a request:
///
/// - `advance MS`: time moves on MS milliseconds, from one due timer to the next, each step once
///   the loop is settled (no read queued, no offloaded work or speech helper request out, no
///   callback due); answered `ok` once it is settled at the new time, or `stalled` when it did not
///   settle within a minute of real time.
///
/// For the suites that check a turn's decisions against a real `parley serve` and its speech
/// helper: a decode that takes a second on a starved CPU takes no time on the clock, so the same
/// audio gives the same decisions on any machine. Never for serving users: the loop's time stops.
enum TestClockControl {
    static func start(path: String, clock: ManualClock) throws {
        guard let address = SocketAddress.unix(path: path) else { throw StartupError("--test-clock: \(path) cannot be a socket's path") }
        _ = Sys.remove(path)
        let listener: Int32
        do {
            listener = try Sys.streamSocket(family: AF_UNIX, .blocking)
            try Sys.listen(listener, on: address, backlog: 4, sharedPort: false)
            _ = try Thread.spawn(name: "parley-test-clock") { serve(listener, clock) }
        } catch {
            throw StartupError("--test-clock \(path): \(error)")
        }
    }

    private static func serve(_ listener: Int32, _ clock: ManualClock) {
        while true {
            guard let fd = try? Sys.accept(listener) else { continue }
            try? Sys.setBlocking(fd)
            answer(fd, clock)
            Sys.close(fd)
        }
    }

    /// Requests on one connection, until it ends.
    private static func answer(_ fd: Int32, _ clock: ManualClock) {
        var line: [UInt8] = []
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256, alignment: 1)
        defer { buffer.deallocate() }
        while case .transferred(let n)? = try? Sys.read(fd, into: buffer), n > 0 {
            for byte in buffer.prefix(n) {
                guard byte == UInt8(ascii: "\n") else {
                    if line.count < 64 { line.append(byte) }
                    continue
                }
                let words = String(decoding: line, as: UTF8.self).split(separator: " ")
                line.removeAll()
                let reply: String
                if words.count == 2, words[0] == "advance", let ms = Int(words[1]), ms >= 0 {
                    reply = clock.advance(milliseconds: ms) ? "ok\n" : "stalled\n"
                } else {
                    reply = "unknown request: say advance MS\n"
                }
                guard (try? Sys.writeWhole(fd, Array(reply.utf8))) != nil else { return }
            }
        }
    }
}
