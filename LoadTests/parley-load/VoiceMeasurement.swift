import Loop

/// The measurement `voice` and `calls` share: open the sessions, stream at real-time pace through a
/// warm-up, then measure while the server's /metrics are scraped before and after on their own
/// thread (so the frames keep going out on time), then let the server catch up and count what it
/// processed.
struct VoiceMeasurement {
    let target: LoadTarget
    let warmup: Double
    let duration: Double
    let serverPid: Int32?

    func run(_ settings: VoiceRun.Settings, describe: () -> VoiceSummary.Run) throws -> VoiceSummary {
        let before: ServerMetrics
        do { before = try ServerMetrics.fetch(from: target) } catch { throw LoadFailure.unreachable(error, target) }

        let cpuStart = CPUTime.ofSelf()
        let run = try VoiceRun(settings)
        let progress = Progress()
        run.connect(progress: progress)
        run.startSpeakers()
        run.stream(until: MonotonicClock.nanoseconds() + MonotonicClock.nanoseconds(warmup), measuring: false, progress: progress)
        // The scrapes run on their own thread while the frames keep going out on time.
        let startFetch = BackgroundFetch(target)
        let serverCPUStart = serverPid.flatMap { ProcessFigures(pid: $0).cpuSeconds }
        let machineStart = MachineCPU.now()
        let cpuMeasureStart = CPUTime.ofSelf()
        let measureStart = MonotonicClock.nanoseconds()
        run.stream(until: measureStart + MonotonicClock.nanoseconds(duration), measuring: true, progress: progress)
        let measured = MonotonicClock.seconds(since: measureStart)
        let cpuMeasured = CPUTime.ofSelf() - cpuMeasureStart
        let serverCPUEnd = serverPid.flatMap { ProcessFigures(pid: $0).cpuSeconds }
        let steal = machineStart.flatMap { a in MachineCPU.now().map { $0.stealFraction(since: a) } }
        let endFetch = BackgroundFetch(target)
        run.stream(until: .max, measuring: false, progress: progress) { endFetch.isDone }
        let start = startFetch.take(), end = endFetch.take()
        var serverCPU: Double?
        if let a = serverCPUStart, let b = serverCPUEnd { serverCPU = b - a } else if let a = start?.cpuSeconds, let b = end?.cpuSeconds { serverCPU = b - a }
        // Every frame sent, against every frame the server processed, once it has had a second to
        // catch up: the frames it dropped or never got to.
        run.stopSpeaking()
        run.stream(until: MonotonicClock.nanoseconds() + 1_000_000_000, measuring: false, progress: progress)
        let final = try? ServerMetrics.fetch(from: target, timeoutSeconds: 30)
        progress.finish()
        run.pool.closeAll()

        let described = describe()
        return VoiceSummary(target: target, run: described, streams: run.streams, speaking: run.speaking,
                            ready: run.ready, before: before, start: start, end: end, measuredSeconds: measured,
                            framesSent: run.framesSentMeasuring, framesSentInAll: run.framesSent, final: final,
                            sendLateness: run.sendLateness,
                            speechStarted: run.speechStarted, speechStopped: run.speechStopped,
                            responsesDone: run.responsesDone, errors: run.errors,
                            serverCores: serverCPU.map { $0 / measured }, steal: steal,
                            clientCores: cpuMeasured.total / measured, clientCPU: CPUTime.ofSelf() - cpuStart)
    }
}
