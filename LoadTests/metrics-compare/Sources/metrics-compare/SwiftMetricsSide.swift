import CoreMetrics
import Prometheus
import Synchronization

/// The same series through swift-metrics' API (CoreMetrics 2.13.0) with swift-prometheus's
/// PrometheusMetricsFactory as the backend, handed to each metric (`factory:`) rather than
/// bootstrapped into the global MetricsSystem. The idiomatic types: Counter, Meter for gauges that
/// go up and down, Gauge for values set at scrape, Timer for latencies (DurationHistogram),
/// Recorder for the real-time factors (ValueHistogram). Bounds are given to the factory per label.
/// swift-metrics has no help text, so this exposition has no HELP lines.
final class SwiftMetricsSide: MetricsSide {
    let name = "swift-metrics → swift-prometheus"
    let registry = PrometheusCollectorRegistry()

    let open: [Meter]
    let accepted: CoreMetrics.Counter
    let refused: [CoreMetrics.Counter]
    let closed: [CoreMetrics.Counter]
    let messagesIn, messagesOut, bytesIn, bytesOut: CoreMetrics.Counter
    let accountedGauge, residentGauge, proportionalGauge, startupGauge, residentPerConnection, accountedPerConnection: CoreMetrics.Gauge
    let cpuSeconds: FloatingPointCounter
    let tlsHandshakes: [CoreMetrics.Counter]
    let tlsInProgress: Meter
    let tlsReloads: [CoreMetrics.Counter]
    let certificateExpiry: CoreMetrics.Gauge
    let lag: Timer
    let accounted = Atomic<Int>(0)
    let sessions = Atomic<Int>(0)

    let sessionsOpen: Meter
    let turns: CoreMetrics.Counter
    let responses: [CoreMetrics.Counter]
    let firstTokenSeconds, serverAdded, speechToResponse, audioLag: Timer
    let framesProcessed, framesRejected: CoreMetrics.Counter

    let recognitionRTF, synthesisRTF, encodingRTF: Recorder
    let voiceToVoice, transcription: Timer
    let recognizersBusy: Meter
    let overloaded: CoreMetrics.Counter
    let queueDepth, workersBusy: CoreMetrics.Gauge

    init() {
        var factory = PrometheusMetricsFactory(registry: registry)
        func durations(_ bounds: [Double]) -> [Duration] { bounds.map { .nanoseconds(Int64(($0 * 1e9).rounded())) } }
        factory.durationHistogramBuckets = [
            "parley_loop_iteration_seconds": durations(Bounds.lag),
            "parley_upstream_first_token_seconds": durations(Bounds.firstToken),
            "parley_server_added_latency_seconds": durations(Bounds.latency),
            "parley_speech_stopped_to_response_created_seconds": durations(Bounds.speechToResponse),
            "parley_audio_input_lag_seconds": durations(Bounds.audioLag),
            "parley_voice_to_voice_seconds": durations(Bounds.voiceToVoice),
            "parley_transcription_seconds": durations(Bounds.transcription),
        ]
        factory.valueHistogramBuckets = [
            "parley_speech_recognition_real_time_factor": Bounds.ratio,
            "parley_speech_synthesis_real_time_factor": Bounds.ratio,
            "parley_speech_encoding_real_time_factor": Bounds.ratio,
        ]
        let f = factory
        open = endpointNames.map { Meter(label: "parley_connections_open", dimensions: [("endpoint", $0)], factory: f) }
        accepted = .init(label: "parley_connections_accepted_total", factory: f)
        refused = refusalReasons.map { .init(label: "parley_connections_refused_total", dimensions: [("reason", $0)], factory: f) }
        closed = closeCodes.map { .init(label: "parley_connections_closed_total", dimensions: [("code", $0)], factory: f) }
        messagesIn = .init(label: "parley_websocket_messages_received_total", factory: f)
        messagesOut = .init(label: "parley_websocket_messages_sent_total", factory: f)
        bytesIn = .init(label: "parley_network_received_bytes_total", factory: f)
        bytesOut = .init(label: "parley_network_sent_bytes_total", factory: f)
        accountedGauge = .init(label: "parley_accounted_bytes", factory: f)
        residentGauge = .init(label: "parley_process_resident_memory_bytes", factory: f)
        proportionalGauge = .init(label: "parley_process_proportional_memory_bytes", factory: f)
        cpuSeconds = .init(label: "parley_process_cpu_seconds_total", factory: f)
        startupGauge = .init(label: "parley_process_startup_resident_memory_bytes", factory: f)
        residentPerConnection = .init(label: "parley_resident_bytes_per_connection", factory: f)
        accountedPerConnection = .init(label: "parley_accounted_bytes_per_connection", factory: f)
        tlsHandshakes = tlsResults.map { .init(label: "parley_tls_handshakes_total", dimensions: [("result", $0)], factory: f) }
        tlsInProgress = Meter(label: "parley_tls_handshakes_in_progress", factory: f)
        tlsReloads = ["ok", "failed"].map { .init(label: "parley_tls_certificate_reloads_total", dimensions: [("result", $0)], factory: f) }
        certificateExpiry = .init(label: "parley_tls_certificate_expiry_timestamp_seconds", factory: f)
        lag = Timer(label: "parley_loop_iteration_seconds", factory: f)

        sessionsOpen = Meter(label: "parley_sessions_open", factory: f)
        turns = .init(label: "parley_session_turns_total", factory: f)
        responses = statuses.map { .init(label: "parley_session_responses_total", dimensions: [("status", $0)], factory: f) }
        firstTokenSeconds = Timer(label: "parley_upstream_first_token_seconds", factory: f)
        serverAdded = Timer(label: "parley_server_added_latency_seconds", factory: f)
        speechToResponse = Timer(label: "parley_speech_stopped_to_response_created_seconds", factory: f)
        framesProcessed = .init(label: "parley_audio_input_frames_total", dimensions: [("result", "processed")], factory: f)
        framesRejected = .init(label: "parley_audio_input_frames_total", dimensions: [("result", "rejected")], factory: f)
        audioLag = Timer(label: "parley_audio_input_lag_seconds", factory: f)

        recognitionRTF = Recorder(label: "parley_speech_recognition_real_time_factor", factory: f)
        synthesisRTF = Recorder(label: "parley_speech_synthesis_real_time_factor", factory: f)
        encodingRTF = Recorder(label: "parley_speech_encoding_real_time_factor", factory: f)
        voiceToVoice = Timer(label: "parley_voice_to_voice_seconds", factory: f)
        transcription = Timer(label: "parley_transcription_seconds", factory: f)
        recognizersBusy = Meter(label: "parley_speech_recognizers_busy", factory: f)
        overloaded = .init(label: "parley_speech_overloaded_total", factory: f)
        queueDepth = .init(label: "parley_speech_queue_depth", factory: f)
        workersBusy = .init(label: "parley_speech_workers_busy", factory: f)
    }

    func opened(loop: Int, endpoint: Int) {
        tlsHandshakes[0].increment()
        accepted.increment()
        open[endpoint].increment()
        accounted.add(4096, ordering: .relaxed)
        sessions.add(1, ordering: .relaxed)
        sessionsOpen.increment()
    }

    func audioFrame(loop: Int, bytes: Int, lagNanoseconds: UInt64, iterationNanoseconds: UInt64) {
        bytesIn.increment(by: bytes)
        messagesIn.increment()
        framesProcessed.increment()
        audioLag.recordNanoseconds(lagNanoseconds)
        lag.recordNanoseconds(iterationNanoseconds)
    }

    func speechStopped(loop: Int, recognitionRTF: Double, transcriptionNanoseconds: UInt64, toResponseNanoseconds: UInt64) {
        recognizersBusy.increment()
        self.recognitionRTF.record(recognitionRTF)
        recognizersBusy.decrement()
        transcription.recordNanoseconds(transcriptionNanoseconds)
        speechToResponse.recordNanoseconds(toResponseNanoseconds)
    }

    func responseCreated(loop: Int) { turns.increment() }

    func firstToken(loop: Int, nanoseconds: UInt64) { firstTokenSeconds.recordNanoseconds(nanoseconds) }

    func delta(loop: Int, bytes: Int, addedNanoseconds: UInt64, iterationNanoseconds: UInt64) {
        serverAdded.recordNanoseconds(addedNanoseconds)
        messagesOut.increment()
        bytesOut.increment(by: bytes)
        lag.recordNanoseconds(iterationNanoseconds)
    }

    func replyAudio(loop: Int, synthesisRTF: Double, encodingRTF: Double, voiceToVoiceNanoseconds: UInt64) {
        self.synthesisRTF.record(synthesisRTF)
        self.encodingRTF.record(encodingRTF)
        voiceToVoice.recordNanoseconds(voiceToVoiceNanoseconds)
    }

    func responseDone(loop: Int, status: Int) { responses[status].increment() }

    func closed(loop: Int, endpoint: Int, code: Int) {
        open[endpoint].decrement()
        accounted.add(-4096, ordering: .relaxed)
        sessions.add(-1, ordering: .relaxed)
        closed[code].increment()
        sessionsOpen.decrement()
    }

    func counterAdd() { messagesIn.increment() }
    func labelledCounterAdd() { framesProcessed.increment() }
    func histogramObserve(nanoseconds: UInt64) { serverAdded.recordNanoseconds(nanoseconds) }

    func scrape() -> String {
        let accounted = accounted.load(ordering: .relaxed)
        let sessions = sessions.load(ordering: .relaxed)
        accountedGauge.record(accounted)
        residentGauge.record(ProcessFigures.resident)
        proportionalGauge.record(ProcessFigures.proportional)
        startupGauge.record(ProcessFigures.startupResident)
        cpuSeconds.reset()
        cpuSeconds.increment(by: ProcessFigures.cpuSeconds)
        residentPerConnection.record(sessions > 0 ? max(0, ProcessFigures.resident - ProcessFigures.startupResident) / sessions : 0)
        accountedPerConnection.record(sessions > 0 ? accounted / sessions : 0)
        certificateExpiry.record(ProcessFigures.certificateNotAfter)
        queueDepth.record(ProcessFigures.speechQueueDepth)
        workersBusy.record(ProcessFigures.speechWorkersBusy)
        return registry.emitToString()
    }
}
