import Loop
import Metrics

/// The speech series in /metrics: how fast recognition and synthesis run against real time, how
/// full the speech workers are, and the latency a user hears (speech_stopped to first audio sent).
public final class SpeechMetrics: Sendable {
    public static let shared = SpeechMetrics()

    static let ratioBounds: [Double] = [0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 5]

    public let recognitionRealTimeFactor = Histogram(name: "parley_speech_recognition_real_time_factor",
                                                     help: "CPU seconds a turn's recognition took per second of its audio (below 1 is faster than real time).",
                                                     bounds: ratioBounds)
    public let synthesisRealTimeFactor = Histogram(name: "parley_speech_synthesis_real_time_factor",
                                                   help: "CPU seconds synthesis (and encoding) took per second of audio produced.",
                                                   bounds: ratioBounds)
    public let encodingRealTimeFactor = Histogram(name: "parley_speech_encoding_real_time_factor",
                                                  help: "CPU seconds resampling and encoding a reply took per second of its audio.",
                                                  bounds: ratioBounds)
    public let voiceToVoice = Histogram(name: "parley_voice_to_voice_seconds",
                                        help: "From speech_stopped to the reply's first audio sent to the client.",
                                        bounds: [0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10])
    public let transcription = Histogram(name: "parley_transcription_seconds",
                                         help: "From speech_stopped to the turn's final transcript.",
                                         bounds: [0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10])
    public let recognizersBusy = MetricFamily(name: "parley_speech_recognizers_busy", help: "Speech recognisers lent to a turn now.", kind: .gauge)
    public let overloaded = MetricFamily(name: "parley_speech_overloaded_total",
                                         help: "Turns and sentences refused because every recogniser was busy or the speech queue was full.")

    public func render(pool: WorkerPool?) -> String {
        var out = PrometheusText()
        for histogram in [recognitionRealTimeFactor, synthesisRealTimeFactor, encodingRealTimeFactor, voiceToVoice, transcription] {
            histogram.render(into: &out)
        }
        recognizersBusy.render(into: &out)
        overloaded.render(into: &out)
        if let pool {
            out.single("parley_speech_queue_depth", .gauge, help: "Speech jobs waiting for a worker.", pool.depth)
            out.single("parley_speech_workers_busy", .gauge, help: "Speech workers running a job now.", pool.busy)
        }
        return out.text
    }
}
