import Models
import Loop
import Metrics

/// The speech series in /metrics: how fast recognition and synthesis run against real time, how
/// full the speech workers are, and the latency a user hears (speech_stopped to first audio sent).
public final class SpeechMetrics: Sendable {
    public static let shared = SpeechMetrics(registry: .process)

    /// Where its series are declared.
    public let registry: MetricsRegistry

    static let ratioBounds: [Double] = [0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 5]

    public let recognitionRealTimeFactor: Histogram
    public let synthesisRealTimeFactor: Histogram
    public let encodingRealTimeFactor: Histogram
    public let voiceToVoice: Histogram
    public let transcription: Histogram
    public let recognizersBusy: MetricFamily
    public let overloaded: MetricFamily
    /// CPU time of one neural VAD window (32 ms of audio): Silero's cost, observed per call.
    public let vadWindow: Histogram
    /// The speech helper (helpers/parley_speech.py): 1 while it serves, and how often it was started again.
    public let helperUp: MetricFamily
    public let helperRestarts: MetricFamily

    init(registry: MetricsRegistry = MetricsRegistry()) {
        self.registry = registry
        recognitionRealTimeFactor = Histogram(name: "parley_speech_recognition_real_time_factor",
                                                     help: "CPU seconds a turn's recognition took per second of its audio (below 1 is faster than real time).",
                                                     bounds: Self.ratioBounds, registry: registry)
        synthesisRealTimeFactor = Histogram(name: "parley_speech_synthesis_real_time_factor",
                                                   help: "CPU seconds synthesis (and encoding) took per second of audio produced.",
                                                   bounds: Self.ratioBounds, registry: registry)
        encodingRealTimeFactor = Histogram(name: "parley_speech_encoding_real_time_factor",
                                                  help: "CPU seconds resampling and encoding a reply took per second of its audio.",
                                                  bounds: Self.ratioBounds, registry: registry)
        voiceToVoice = Histogram(name: "parley_voice_to_voice_seconds",
                                        help: "From speech_stopped to the reply's first audio sent to the client.",
                                        bounds: [0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10], registry: registry)
        transcription = Histogram(name: "parley_transcription_seconds",
                                         help: "From speech_stopped to the turn's final transcript.",
                                         bounds: [0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10], registry: registry)
        recognizersBusy = MetricFamily(name: "parley_speech_recognizers_busy", help: "Speech recognisers lent to a turn now.", kind: .gauge, registry: registry)
        overloaded = MetricFamily(name: "parley_speech_overloaded_total",
                                         help: "Turns and sentences refused because every recogniser was busy or the speech queue was full.", registry: registry)
        vadWindow = Histogram(name: "parley_vad_seconds",
                              help: "Time the neural VAD (Silero) took to score one 32 ms window of a session's audio, on the session's loop.",
                              bounds: [0.00002, 0.00005, 0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01], registry: registry)
        helperUp = MetricFamily(name: "parley_speech_helper_up", help: "1 while the speech helper (the end-of-turn model) serves, 0 while it is down or starting.",
                                kind: .gauge, registry: registry)
        helperRestarts = MetricFamily(name: "parley_speech_helper_restarts_total", help: "Times the speech helper ended and was started again.", registry: registry)
    }

    /// The speech workers' gauges, read at scrape, in the registry of the endpoint that runs them.
    public static func declare(pool: WorkerPool, in registry: MetricsRegistry) {
        _ = ComputedFamily(name: "parley_speech_queue_depth", help: "Speech jobs waiting for a worker.", kind: .gauge, registry: registry) { pool.depth }
        _ = ComputedFamily(name: "parley_speech_workers_busy", help: "Speech workers running a job now.", kind: .gauge, registry: registry) { pool.busy }
    }

    /// Its series alone, as a scrape shows them.
    public func render() -> String { registry.render() }
}
