import Prometheus
import Synchronization

/// Parley's bounds, shared by the two swift-prometheus sides.
enum Bounds {
    static let latency: [Double] = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1]
    static let lag: [Double] = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1]
    static let firstToken: [Double] = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]
    static let speechToResponse: [Double] = [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5]
    static let audioLag: [Double] = [0.0001, 0.00025, 0.0005, 0.001, 0.0015, 0.002, 0.003, 0.004, 0.005, 0.0075, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 2.5, 10]
    static let ratio: [Double] = [0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 5]
    static let voiceToVoice: [Double] = [0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10]
    static let transcription: [Double] = [0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10]
}

/// swift-prometheus 2.4.1 used directly: one PrometheusCollectorRegistry, the same series, names,
/// help texts, labels and bounds as Parley, each metric a process-wide object shared by both loops
/// (its handles are thread-safe, so there is no per-loop copy to sum). Latency histograms are
/// ValueHistograms in seconds, as Parley's are. What swift-prometheus cannot give back (a gauge's
/// or counter's value) but Parley's per-connection ratios need is kept in two atomics of our own
/// and the gauges set from them at scrape time, as are the /proc figures.
final class PrometheusSide: MetricsSide {
    let name = "swift-prometheus (registry)"
    let registry = PrometheusCollectorRegistry()

    // The server's series.
    let open: [Gauge]
    let accepted: Counter
    let refused: [Counter]
    /// Only the close codes the simulation sends: a new code would be a makeCounter call (the
    /// registry's lock and dictionary) the first time it is seen.
    let closed: [Counter]
    let messagesIn, messagesOut, bytesIn, bytesOut: Counter
    let accountedGauge, residentGauge, proportionalGauge, startupGauge, residentPerConnection, accountedPerConnection: Gauge
    let cpuSeconds: Counter
    let tlsHandshakes: [Counter]
    let tlsInProgress: Gauge
    let tlsReloads: [Counter]
    let certificateExpiry: Gauge
    let lag: ValueHistogram
    /// Values a scrape needs back, which swift-prometheus's handles do not expose.
    let accounted = Atomic<Int>(0)
    let sessions = Atomic<Int>(0)

    // Sessions.
    let sessionsOpen: Gauge
    let turns: Counter
    let responses: [Counter]
    let firstTokenSeconds, serverAdded, speechToResponse, audioLag: ValueHistogram
    let framesProcessed, framesRejected: Counter

    // Speech.
    let recognitionRTF, synthesisRTF, encodingRTF, voiceToVoice, transcription: ValueHistogram
    let recognizersBusy: Gauge
    let overloaded: Counter
    let queueDepth, workersBusy: Gauge

    init() {
        let r = registry
        /// A whole name (no namespace or unit parts to join) and its help text.
        func d(_ name: String, _ help: String) -> MetricNameDescriptor { MetricNameDescriptor(metricName: name, unitName: "", helpText: help) }
        open = endpointNames.map {
            r.makeGauge(descriptor: d("parley_connections_open", "Open connections by endpoint (http: not upgraded)."), labels: [("endpoint", $0)])
        }
        accepted = r.makeCounter(descriptor: d("parley_connections_accepted_total", "Connections accepted."))
        refused = refusalReasons.map {
            r.makeCounter(descriptor: d("parley_connections_refused_total", "Connections turned away, by reason."), labels: [("reason", $0)])
        }
        closed = closeCodes.map {
            r.makeCounter(descriptor: d("parley_connections_closed_total", "Connections closed, by WebSocket close code (1006: dropped without a close frame; none: plain HTTP)."), labels: [("code", $0)])
        }
        messagesIn = r.makeCounter(descriptor: d("parley_websocket_messages_received_total", "WebSocket data messages received."))
        messagesOut = r.makeCounter(descriptor: d("parley_websocket_messages_sent_total", "WebSocket data messages sent."))
        bytesIn = r.makeCounter(descriptor: d("parley_network_received_bytes_total", "Bytes read from client sockets."))
        bytesOut = r.makeCounter(descriptor: d("parley_network_sent_bytes_total", "Bytes written to client sockets."))
        accountedGauge = r.makeGauge(descriptor: d("parley_accounted_bytes", "Heap bytes held by connections, as counted by their memory accounts."))
        residentGauge = r.makeGauge(descriptor: d("parley_process_resident_memory_bytes", "Resident set size of the process."))
        proportionalGauge = r.makeGauge(descriptor: d("parley_process_proportional_memory_bytes", "Proportional set size (PSS) of the process: shared pages divided among the processes sharing them, so that it sums across workers."))
        cpuSeconds = r.makeCounter(descriptor: d("parley_process_cpu_seconds_total", "User and system CPU time of the process (summed over the workers with --workers)."))
        startupGauge = r.makeGauge(descriptor: d("parley_process_startup_resident_memory_bytes", "Resident set size once the loops had started, before any connection."))
        residentPerConnection = r.makeGauge(descriptor: d("parley_resident_bytes_per_connection", "(resident - startup resident) / open WebSocket sessions; 0 with none open."))
        accountedPerConnection = r.makeGauge(descriptor: d("parley_accounted_bytes_per_connection", "Accounted bytes / open WebSocket sessions; 0 with none open."))
        tlsHandshakes = tlsResults.map {
            r.makeCounter(descriptor: d("parley_tls_handshakes_total", "TLS handshakes with clients, by how they ended."), labels: [("result", $0)])
        }
        tlsInProgress = r.makeGauge(descriptor: d("parley_tls_handshakes_in_progress", "TLS handshakes under way (capped by --max-tls-handshakes)."))
        tlsReloads = ["ok", "failed"].map {
            r.makeCounter(descriptor: d("parley_tls_certificate_reloads_total", "Certificate reloads (SIGHUP), by outcome."), labels: [("result", $0)])
        }
        certificateExpiry = r.makeGauge(descriptor: d("parley_tls_certificate_expiry_timestamp_seconds", "When the served certificate expires (Unix time)."))
        lag = r.makeValueHistogram(descriptor: d("parley_loop_iteration_seconds", "Time an event-loop iteration spent handling ready events and timers: how late the next event can be served."), buckets: Bounds.lag)

        sessionsOpen = r.makeGauge(descriptor: d("parley_sessions_open", "Realtime sessions open (/v1/realtime and /ws)."))
        turns = r.makeCounter(descriptor: d("parley_session_turns_total", "Responses started (turns)."))
        responses = statuses.map {
            r.makeCounter(descriptor: d("parley_session_responses_total", "Responses finished, by status."), labels: [("status", $0)])
        }
        firstTokenSeconds = r.makeValueHistogram(descriptor: d("parley_upstream_first_token_seconds", "From sending a request to an upstream model to its first text delta."), buckets: Bounds.firstToken)
        serverAdded = r.makeValueHistogram(descriptor: d("parley_server_added_latency_seconds", "From an upstream delta's bytes being read to the client's frame being written: what Parley adds."), buckets: Bounds.latency)
        speechToResponse = r.makeValueHistogram(descriptor: d("parley_speech_stopped_to_response_created_seconds", "From speech_stopped to response.created (transcription and turn-taking)."), buckets: Bounds.speechToResponse)
        framesProcessed = r.makeCounter(descriptor: d("parley_audio_input_frames_total", "Audio frames (Opus packets, or pcm16 appends) received, by outcome."), labels: [("result", "processed")])
        framesRejected = r.makeCounter(descriptor: d("parley_audio_input_frames_total", "Audio frames (Opus packets, or pcm16 appends) received, by outcome."), labels: [("result", "rejected")])
        audioLag = r.makeValueHistogram(descriptor: d("parley_audio_input_lag_seconds", "How far behind real time each audio frame was when its processing (decode, resampling, VAD, turn-taking) ended, by the stream's own clock; meaningful for clients that stream at real-time pace."), buckets: Bounds.audioLag)

        recognitionRTF = r.makeValueHistogram(descriptor: d("parley_speech_recognition_real_time_factor", "CPU seconds a turn's recognition took per second of its audio (below 1 is faster than real time)."), buckets: Bounds.ratio)
        synthesisRTF = r.makeValueHistogram(descriptor: d("parley_speech_synthesis_real_time_factor", "CPU seconds synthesis (and encoding) took per second of audio produced."), buckets: Bounds.ratio)
        encodingRTF = r.makeValueHistogram(descriptor: d("parley_speech_encoding_real_time_factor", "CPU seconds resampling and encoding a reply took per second of its audio."), buckets: Bounds.ratio)
        voiceToVoice = r.makeValueHistogram(descriptor: d("parley_voice_to_voice_seconds", "From speech_stopped to the reply's first audio sent to the client."), buckets: Bounds.voiceToVoice)
        transcription = r.makeValueHistogram(descriptor: d("parley_transcription_seconds", "From speech_stopped to the turn's final transcript."), buckets: Bounds.transcription)
        recognizersBusy = r.makeGauge(descriptor: d("parley_speech_recognizers_busy", "Speech recognisers lent to a turn now."))
        overloaded = r.makeCounter(descriptor: d("parley_speech_overloaded_total", "Turns and sentences refused because every recogniser was busy or the speech queue was full."))
        queueDepth = r.makeGauge(descriptor: d("parley_speech_queue_depth", "Speech jobs waiting for a worker."))
        workersBusy = r.makeGauge(descriptor: d("parley_speech_workers_busy", "Speech workers running a job now."))
    }

    @inline(__always) private func seconds(_ ns: UInt64) -> Double { Double(ns) / 1e9 }

    func opened(loop: Int, endpoint: Int) {
        tlsHandshakes[0].increment()
        accepted.increment()
        open[endpoint].increment()
        accounted.add(4096, ordering: .relaxed)
        sessions.add(1, ordering: .relaxed)
        sessionsOpen.increment()
    }

    func audioFrame(loop: Int, bytes: Int, lagNanoseconds: UInt64, iterationNanoseconds: UInt64) {
        bytesIn.increment(by: Int64(bytes))
        messagesIn.increment()
        framesProcessed.increment()
        audioLag.record(seconds(lagNanoseconds))
        lag.record(seconds(iterationNanoseconds))
    }

    func speechStopped(loop: Int, recognitionRTF: Double, transcriptionNanoseconds: UInt64, toResponseNanoseconds: UInt64) {
        recognizersBusy.increment()
        self.recognitionRTF.record(recognitionRTF)
        recognizersBusy.decrement()
        transcription.record(seconds(transcriptionNanoseconds))
        speechToResponse.record(seconds(toResponseNanoseconds))
    }

    func responseCreated(loop: Int) { turns.increment() }

    func firstToken(loop: Int, nanoseconds: UInt64) { firstTokenSeconds.record(seconds(nanoseconds)) }

    func delta(loop: Int, bytes: Int, addedNanoseconds: UInt64, iterationNanoseconds: UInt64) {
        serverAdded.record(seconds(addedNanoseconds))
        messagesOut.increment()
        bytesOut.increment(by: Int64(bytes))
        lag.record(seconds(iterationNanoseconds))
    }

    func replyAudio(loop: Int, synthesisRTF: Double, encodingRTF: Double, voiceToVoiceNanoseconds: UInt64) {
        self.synthesisRTF.record(synthesisRTF)
        self.encodingRTF.record(encodingRTF)
        voiceToVoice.record(seconds(voiceToVoiceNanoseconds))
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
    func histogramObserve(nanoseconds: UInt64) { serverAdded.record(seconds(nanoseconds)) }

    func scrape() -> String {
        let accounted = accounted.load(ordering: .relaxed)
        let sessions = sessions.load(ordering: .relaxed)
        accountedGauge.set(to: Double(accounted))
        residentGauge.set(to: Double(ProcessFigures.resident))
        proportionalGauge.set(to: Double(ProcessFigures.proportional))
        startupGauge.set(to: Double(ProcessFigures.startupResident))
        // A counter read from /proc: swift-prometheus's counters only go up, so reset and add.
        cpuSeconds.reset()
        cpuSeconds.increment(by: ProcessFigures.cpuSeconds)
        residentPerConnection.set(to: Double(sessions > 0 ? max(0, ProcessFigures.resident - ProcessFigures.startupResident) / sessions : 0))
        accountedPerConnection.set(to: Double(sessions > 0 ? accounted / sessions : 0))
        certificateExpiry.set(to: Double(ProcessFigures.certificateNotAfter))
        queueDepth.set(to: Double(ProcessFigures.speechQueueDepth))
        workersBusy.set(to: Double(ProcessFigures.speechWorkersBusy))
        return registry.emitToString()
    }
}
