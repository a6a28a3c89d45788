import Loop

/// Runs a fresh event loop on this thread, as a server's loop thread runs one: `body` starts the
/// work and calls `finish` when it is done. False if `seconds` passed first.
public func runLoop(seconds: Double = 15, _ body: (EventLoop, @escaping () -> Void) throws -> Void) throws -> Bool {
    let loop = try EventLoop(handle: LoopHandle(index: 0))
    var finished = false
    try body(loop) {
        finished = true
        loop.stop()
    }
    let timeout = loop.schedule(after: seconds) { loop.stop() }
    if !finished { loop.run() }
    timeout.cancel()
    return finished
}

/// Checks `condition` every 10 ms on the loop and calls `then` once it holds.
public func poll(_ loop: EventLoop, until condition: @escaping () -> Bool, then: @escaping () -> Void) {
    if condition() { return then() }
    loop.schedule(after: 0.01) { poll(loop, until: condition, then: then) }
}

/// A series' value in Prometheus text (`name{labels}` exactly as rendered).
public func metric(_ text: String, _ series: String) -> Int? {
    for line in text.split(separator: "\n") where line.hasPrefix(series + " ") {
        return Int(line.dropFirst(series.count + 1))
    }
    return nil
}
