@testable import Models
import Testing
import Glibc
import Loop
import Metrics
import TestSupport
@testable import SpeechContracts

/// The speech series are declared in a registry and written through `PrometheusText`: each
/// family's text (HELP, TYPE and sample lines) is what it was when each wrote its own, and the
/// registry renders the families ordered by name.
@Suite struct SpeechMetricsTextTests {
    @Test func speechSeriesRenderAsBefore() throws {
        let pool = try WorkerPool(name: "test-metrics", threads: 1, queueLimit: 4)
        let release = Counter()
        defer {
            release.add(1)
            pool.stop()
        }
        // One job running, two waiting.
        for _ in 0..<3 { #expect(pool.submit { while release.current == 0 { usleep(1000) } }) }
        while pool.busy == 0 { usleep(1000) }

        let speech = SpeechMetrics()
        speech.voiceToVoice.observe(seconds: 0.3)
        speech.recognizersBusy.add(2)
        speech.overloaded.add(1)
        let histograms = [speech.recognitionRealTimeFactor, speech.synthesisRealTimeFactor, speech.encodingRealTimeFactor,
                          speech.voiceToVoice, speech.transcription, speech.vadWindow].map { $0.render() }.joined()
        let families = """
            # HELP parley_speech_recognizers_busy Speech recognisers lent to a turn now.
            # TYPE parley_speech_recognizers_busy gauge
            parley_speech_recognizers_busy 2
            # HELP parley_speech_overloaded_total Turns and sentences refused because every recogniser was busy or the speech queue was full.
            # TYPE parley_speech_overloaded_total counter
            parley_speech_overloaded_total 1
            # HELP parley_speech_helper_up 1 while the speech helper (the end-of-turn model) serves, 0 while it is down or starting.
            # TYPE parley_speech_helper_up gauge
            parley_speech_helper_up 0
            # HELP parley_speech_helper_restarts_total Times the speech helper ended and was started again.
            # TYPE parley_speech_helper_restarts_total counter
            parley_speech_helper_restarts_total 0

            """
        let poolLines = """
            # HELP parley_speech_queue_depth Speech jobs waiting for a worker.
            # TYPE parley_speech_queue_depth gauge
            parley_speech_queue_depth 2
            # HELP parley_speech_workers_busy Speech workers running a job now.
            # TYPE parley_speech_workers_busy gauge
            parley_speech_workers_busy 1

            """
        #expect(speech.render() == ExpositionFamilies.byName([histograms, families]))
        let workers = MetricsRegistry()
        SpeechMetrics.declare(pool: pool, in: workers)
        #expect(workers.render() == poolLines)
        #expect(histograms.contains("parley_voice_to_voice_seconds_bucket{le=\"0.5\"} 1\n"))
    }
}
