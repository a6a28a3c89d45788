#if canImport(Glibc)
import Glibc
#endif
import Loop
import Models
import SpeechContracts

/// One loop's batch of neural VAD windows (issue 49, item 2). A session whose audio completed a
/// window has staged it (its engine's stream copied it beside the model) and joins here; the
/// model then scores every staged window in one run per rate, and each session that joined takes
/// its probabilities (`.voiceActivityScored`): its speech starts and stops then, as if heard with
/// its audio. One run for many windows instead of one a window: docs/benchmarks.md, "Density".
///
/// When: a call's frames come on the loop's `PlayoutClock` (issue 71), so windows staged in a
/// tick are scored at that tick's end, with every call's of the tick; a WebSocket's microphone
/// frames come as they are read, so the first window staged outside a tick waits `tickSeconds`
/// for others.
final class VoiceActivityPass: PlayoutTickEnd {
    private var waiting: [SessionDriver] = []
    private var model: (any VoiceActivityModel)?
    private var scheduled = false
    /// How long the first window staged waits for others: one pass alone held about three (200
    /// live microphones on two loops, frames spread over their 20 ms), and a run of one window
    /// costs ONNX Runtime twice a window of a large run (116 against 57 µs). At 200 microphones,
    /// every window scored, the server's CPU did not tell 0, 10 and 20 ms apart (3.88, 3.85 and
    /// 3.97 millicores each; docs/benchmarks.md, "Density"). PARLEY_VAD_TICK_MS overrides it,
    /// for benchmarks.
    static let tickSeconds: Double = {
        if let text = getenv("PARLEY_VAD_TICK_MS"), let ms = Double(String(cString: text)), ms >= 0, ms <= 100 { return ms / 1000 }
        return 0.010
    }()

    /// The loop's pass, made with its first batched window.
    static func on(_ loop: EventLoop) -> VoiceActivityPass { loop.local { VoiceActivityPass() } }

    /// `driver`'s windows are staged with `model` (the endpoint's, one a server): scored this pass.
    func join(_ driver: SessionDriver, model: any VoiceActivityModel, on loop: EventLoop) {
        waiting.append(driver)
        self.model = model
        guard !scheduled else { return }
        scheduled = true
        let clock = PlayoutClock.on(loop)
        if clock.isTicking { return clock.whenTickEnds(self) }
        loop.schedule(after: Self.tickSeconds) { [self] in run() }
    }

    func tickEnded() { run() }

    private func run() {
        scheduled = false
        model?.scoreStaged()
        let drivers = waiting
        waiting.removeAll(keepingCapacity: true)
        // A session that joined twice this pass takes its scores the first time; the second finds none.
        for driver in drivers { driver.voiceActivityScored() }
    }
}
