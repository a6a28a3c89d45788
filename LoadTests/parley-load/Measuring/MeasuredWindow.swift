import Loop

/// The figures of a load's measured window, as `voice`, `calls`, `sip` and `webrtc` take them: the
/// server's /metrics at both ends, each scraped on its own thread while the load streams on (so
/// its frames keep going out on time); the server's CPU from /proc (else from its /metrics) and
/// its RSS at the end; the client's CPU; the machine's steal and busy time, for what else ran.
struct MeasuredWindow {
    let seconds: Double
    /// The server's /metrics as the window began and ended (nil: no target, or a scrape failed).
    let start: ServerMetrics?
    let end: ServerMetrics?
    /// CPU seconds over the window.
    let serverCPU: Double?
    let clientCPU: CPUTime
    let serverResident: Double?
    let steal: Double?
    let machineBusy: Double?

    /// Measures `duration` seconds of `stream(deadline, measuring, done)`, which runs the load until
    /// `deadline` or until `done` says so: first the window, measuring, then on, not measuring,
    /// until the end's scrape is in.
    init(target: LoadTarget?, serverPid: Int32?, duration: Double, stream: (_ deadline: UInt64, _ measuring: Bool, _ done: () -> Bool) -> Void) {
        let startFetch = target.map(BackgroundFetch.init)
        let serverCPUStart = serverPid.flatMap { ProcessFigures(pid: $0).cpuSeconds }
        let machineStart = MachineCPU.now()
        let clientStart = CPUTime.ofSelf()
        let measureStart = MonotonicClock.nanoseconds()
        stream(measureStart + MonotonicClock.nanoseconds(duration), true) { false }
        seconds = MonotonicClock.seconds(since: measureStart)
        clientCPU = CPUTime.ofSelf() - clientStart
        let serverCPUEnd = serverPid.flatMap { ProcessFigures(pid: $0).cpuSeconds }
        let residentDuring = serverPid.flatMap { ProcessFigures(pid: $0).residentBytes }
        let machineEnd = MachineCPU.now()
        steal = machineStart.flatMap { a in machineEnd.map { $0.stealFraction(since: a) } }
        machineBusy = machineStart.flatMap { a in machineEnd.map { $0.busySeconds(since: a) } }
        let endFetch = target.map(BackgroundFetch.init)
        stream(.max, false) { endFetch?.isDone ?? true }
        start = startFetch?.take()
        end = endFetch?.take()
        if let a = serverCPUStart, let b = serverCPUEnd {
            serverCPU = b - a
        } else if let a = start?.cpuSeconds, let b = end?.cpuSeconds {
            serverCPU = b - a
        } else {
            serverCPU = nil
        }
        serverResident = residentDuring ?? end?.residentBytes
    }

    var serverCores: Double? { serverCPU.map { $0 / seconds } }
    var clientCores: Double { clientCPU.total / seconds }
    /// Whatever else ran meanwhile (a build, another test), competing for the same cores.
    var otherCores: Double? { machineBusy.flatMap { busy in serverCPU.map { max(0, busy - $0 - clientCPU.total) / seconds } } }

    /// The server's histogram `name` over the window.
    func histogram(_ name: String) -> ServerHistogram? {
        guard let start, let end, let a = ServerHistogram(name, in: start), let b = ServerHistogram(name, in: end) else { return nil }
        return b.since(a)
    }
}
