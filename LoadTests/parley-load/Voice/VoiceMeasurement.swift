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
        let window = MeasuredWindow(target: target, serverPid: serverPid, duration: duration) { deadline, measuring, done in
            run.stream(until: deadline, measuring: measuring, progress: progress, stop: done)
        }
        // Every frame sent, against every frame the server processed, once it has had a second to
        // catch up: the frames it dropped or never got to.
        run.stopSpeaking()
        run.stream(until: MonotonicClock.nanoseconds() + 1_000_000_000, measuring: false, progress: progress)
        let final = try? ServerMetrics.fetch(from: target, timeoutSeconds: 30)
        progress.finish()
        run.pool.closeAll()

        let described = describe()
        return VoiceSummary(target: target, run: described, streams: run.streams, speaking: run.speaking,
                            ready: run.ready, before: before, start: window.start, end: window.end, measuredSeconds: window.seconds,
                            framesSent: run.framesSentMeasuring, framesSentInAll: run.framesSent, final: final,
                            sendLateness: run.sendLateness,
                            speechStarted: run.speechStarted, speechStopped: run.speechStopped,
                            responsesDone: run.responsesDone, errors: run.errors,
                            serverCores: window.serverCores, steal: window.steal,
                            clientCores: window.clientCores, clientCPU: CPUTime.ofSelf() - cpuStart)
    }
}
