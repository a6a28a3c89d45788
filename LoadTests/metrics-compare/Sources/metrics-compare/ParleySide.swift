import ParleyMetrics

/// Parley's side: its own Counter, Histogram, MetricFamily and PrometheusText (compiled from
/// Sources/Metrics through the ParleySources symlink), arranged as Sources/Server (LoopMetrics, MetricsRenderer),
/// Sources/Session/SessionMetrics.swift and SpeechMetrics.swift arrange them: the server's counters
/// and the iteration-lag histogram per loop, summed at scrape time; the session and speech series
/// process-wide. The render functions below follow those files line for line, with /proc readings
/// replaced by constants (ProcessFigures).
final class ParleySide: MetricsSide {
    let name = "Parley (hand-written)"

    /// Parley's LoopMetrics (Sources/Server).
    final class LoopMetrics: Sendable {
        let open = endpointNames.map { _ in Counter() }
        let accepted = Counter()
        let refused = refusalReasons.map { _ in Counter() }
        let closed = (0..<18).map { _ in Counter() }
        let messagesIn = Counter()
        let messagesOut = Counter()
        let bytesIn = Counter()
        let bytesOut = Counter()
        let accountedBytes = Counter()
        let tlsHandshakes = tlsResults.map { _ in Counter() }
        let tlsHandshakesInProgress = Counter()
        /// The loop's own iteration-lag histogram (Sources/Loop/EventLoop.swift).
        let lag = Histogram(name: "parley_loop_iteration_seconds",
                            help: "Time an event-loop iteration spent handling ready events and timers: how late the next event can be served.",
                            bounds: [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1])
    }

    let loops = [LoopMetrics(), LoopMetrics()]
    let messagesInLoop0: Counter
    init() { messagesInLoop0 = loops[0].messagesIn }
    let tlsReloads = Counter()
    let tlsReloadFailures = Counter()

    // SessionMetrics.
    let sessionsOpen = MetricFamily(name: "parley_sessions_open", help: "Realtime sessions open (/v1/realtime and /ws).", kind: .gauge)
    let turns = MetricFamily(name: "parley_session_turns_total", help: "Responses started (turns).")
    let responses = MetricFamily(name: "parley_session_responses_total", help: "Responses finished, by status.",
                                 labels: ["completed", "cancelled", "failed", "incomplete"].map { "status=\"\($0)\"" })
    let firstToken = Histogram(name: "parley_upstream_first_token_seconds",
                               help: "From sending a request to an upstream model to its first text delta.",
                               bounds: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30])
    let serverAdded = Histogram(name: "parley_server_added_latency_seconds",
                                help: "From an upstream delta's bytes being read to the client's frame being written: what Parley adds.")
    let speechToResponse = Histogram(name: "parley_speech_stopped_to_response_created_seconds",
                                     help: "From speech_stopped to response.created (transcription and turn-taking).",
                                     bounds: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5])
    let audioFrames = MetricFamily(name: "parley_audio_input_frames_total", help: "Audio frames (Opus packets, or pcm16 appends) received, by outcome.",
                                   labels: ["processed", "rejected"].map { "result=\"\($0)\"" })
    let audioLag = Histogram(name: "parley_audio_input_lag_seconds",
                             help: "How far behind real time each audio frame was when its processing (decode, resampling, VAD, turn-taking) ended, by the stream's own clock; meaningful for clients that stream at real-time pace.",
                             bounds: [0.0001, 0.00025, 0.0005, 0.001, 0.0015, 0.002, 0.003, 0.004, 0.005, 0.0075, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 2.5, 10])

    // SpeechMetrics.
    static let ratioBounds: [Double] = [0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 5]
    let recognitionRealTimeFactor = Histogram(name: "parley_speech_recognition_real_time_factor",
                                              help: "CPU seconds a turn's recognition took per second of its audio (below 1 is faster than real time).",
                                              bounds: ratioBounds)
    let synthesisRealTimeFactor = Histogram(name: "parley_speech_synthesis_real_time_factor",
                                            help: "CPU seconds synthesis (and encoding) took per second of audio produced.",
                                            bounds: ratioBounds)
    let encodingRealTimeFactor = Histogram(name: "parley_speech_encoding_real_time_factor",
                                           help: "CPU seconds resampling and encoding a reply took per second of its audio.",
                                           bounds: ratioBounds)
    let voiceToVoice = Histogram(name: "parley_voice_to_voice_seconds",
                                 help: "From speech_stopped to the reply's first audio sent to the client.",
                                 bounds: [0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10])
    let transcription = Histogram(name: "parley_transcription_seconds",
                                  help: "From speech_stopped to the turn's final transcript.",
                                  bounds: [0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10])
    let recognizersBusy = MetricFamily(name: "parley_speech_recognizers_busy", help: "Speech recognisers lent to a turn now.", kind: .gauge)
    let overloaded = MetricFamily(name: "parley_speech_overloaded_total",
                                  help: "Turns and sentences refused because every recogniser was busy or the speech queue was full.")

    // MARK: Observations, as Parley's call sites make them.

    func opened(loop: Int, endpoint: Int) {
        let m = loops[loop]
        m.tlsHandshakes[0].add(1)
        m.accepted.add(1)
        m.open[endpoint].add(1)
        m.accountedBytes.add(4096)
        sessionsOpen.add(1)
    }

    func audioFrame(loop: Int, bytes: Int, lagNanoseconds: UInt64, iterationNanoseconds: UInt64) {
        let m = loops[loop]
        m.bytesIn.add(bytes)
        m.messagesIn.add(1)
        audioFrames.add(1, labels: "result=\"processed\"")
        audioLag.observe(nanoseconds: lagNanoseconds)
        m.lag.observe(nanoseconds: iterationNanoseconds)
    }

    func speechStopped(loop: Int, recognitionRTF: Double, transcriptionNanoseconds: UInt64, toResponseNanoseconds: UInt64) {
        recognizersBusy.add(1)
        recognitionRealTimeFactor.observe(seconds: recognitionRTF)
        recognizersBusy.add(-1)
        transcription.observe(nanoseconds: transcriptionNanoseconds)
        speechToResponse.observe(nanoseconds: toResponseNanoseconds)
    }

    func responseCreated(loop: Int) { turns.add(1) }

    func firstToken(loop: Int, nanoseconds: UInt64) { firstToken.observe(nanoseconds: nanoseconds) }

    func delta(loop: Int, bytes: Int, addedNanoseconds: UInt64, iterationNanoseconds: UInt64) {
        let m = loops[loop]
        serverAdded.observe(nanoseconds: addedNanoseconds)
        m.messagesOut.add(1)
        m.bytesOut.add(bytes)
        m.lag.observe(nanoseconds: iterationNanoseconds)
    }

    func replyAudio(loop: Int, synthesisRTF: Double, encodingRTF: Double, voiceToVoiceNanoseconds: UInt64) {
        synthesisRealTimeFactor.observe(seconds: synthesisRTF)
        encodingRealTimeFactor.observe(seconds: encodingRTF)
        voiceToVoice.observe(nanoseconds: voiceToVoiceNanoseconds)
    }

    /// As SessionMetrics.record: the label text is interpolated at the call.
    func responseDone(loop: Int, status: Int) { responses.add(1, labels: "status=\"\(statuses[status])\"") }

    func closed(loop: Int, endpoint: Int, code: Int) {
        let m = loops[loop]
        m.open[endpoint].add(-1)
        m.accountedBytes.add(-4096)
        m.closed[closeCodeIndex[code]].add(1)
        sessionsOpen.add(-1)
    }

    // Each side's single operations go to a metric held in a stored property of the side, the
    // same access on every side.
    func counterAdd() { messagesInLoop0.add(1) }
    func labelledCounterAdd() { audioFrames.add(1, labels: "result=\"processed\"") }
    func histogramObserve(nanoseconds: UInt64) { serverAdded.observe(nanoseconds: nanoseconds) }

    // MARK: The scrape, as MetricsRenderer.render, SessionMetrics.render and SpeechMetrics.render.

    private func sum(_ pick: (LoopMetrics) -> Counter) -> Int { loops.reduce(0) { $0 + pick($1).current } }

    private func closeName(_ index: Int) -> String {
        switch index {
        case 0..<16: return String(1000 + index)
        case 16: return "other"
        default: return "none"
        }
    }

    private func renderTLS(into out: inout PrometheusText) {
        out.family("parley_tls_handshakes_total", .counter, help: "TLS handshakes with clients, by how they ended.")
        for (i, result) in tlsResults.enumerated() {
            out.sample("parley_tls_handshakes_total", labels: "result=\"\(result)\"", sum { $0.tlsHandshakes[i] })
        }
        out.single("parley_tls_handshakes_in_progress", .gauge, help: "TLS handshakes under way (capped by --max-tls-handshakes).",
                   sum { $0.tlsHandshakesInProgress })
        out.family("parley_tls_certificate_reloads_total", .counter, help: "Certificate reloads (SIGHUP), by outcome.")
        out.sample("parley_tls_certificate_reloads_total", labels: "result=\"ok\"", tlsReloads.current)
        out.sample("parley_tls_certificate_reloads_total", labels: "result=\"failed\"", tlsReloadFailures.current)
        out.single("parley_tls_certificate_expiry_timestamp_seconds", .gauge, help: "When the served certificate expires (Unix time).",
                   ProcessFigures.certificateNotAfter)
    }

    private func renderSessions() -> String {
        sessionsOpen.render() + turns.render() + responses.render() + firstToken.render() + serverAdded.render() + speechToResponse.render()
            + audioFrames.render() + audioLag.render()
    }

    private func renderSpeech() -> String {
        var out = recognitionRealTimeFactor.render() + synthesisRealTimeFactor.render() + encodingRealTimeFactor.render() + voiceToVoice.render() + transcription.render()
        out += recognizersBusy.render() + overloaded.render()
        out += "# HELP parley_speech_queue_depth Speech jobs waiting for a worker.\n# TYPE parley_speech_queue_depth gauge\n"
        out += "parley_speech_queue_depth \(ProcessFigures.speechQueueDepth)\n"
        out += "# HELP parley_speech_workers_busy Speech workers running a job now.\n# TYPE parley_speech_workers_busy gauge\n"
        out += "parley_speech_workers_busy \(ProcessFigures.speechWorkersBusy)\n"
        return out
    }

    func scrape() -> String {
        var out = PrometheusText()
        out.family("parley_connections_open", .gauge, help: "Open connections by endpoint (http: not upgraded).")
        var sessions = 0
        for (i, name) in endpointNames.enumerated() {
            let n = sum { $0.open[i] }
            if i > 0 { sessions += n }
            out.sample("parley_connections_open", labels: "endpoint=\"\(name)\"", n)
        }
        out.single("parley_connections_accepted_total", .counter, help: "Connections accepted.", sum { $0.accepted })
        out.family("parley_connections_refused_total", .counter, help: "Connections turned away, by reason.")
        for (i, reason) in refusalReasons.enumerated() {
            out.sample("parley_connections_refused_total", labels: "reason=\"\(reason)\"", sum { $0.refused[i] })
        }
        out.family("parley_connections_closed_total", .counter,
                   help: "Connections closed, by WebSocket close code (1006: dropped without a close frame; none: plain HTTP).")
        for i in 0..<18 {
            let n = sum { $0.closed[i] }
            if n > 0 || i == 0 { out.sample("parley_connections_closed_total", labels: "code=\"\(closeName(i))\"", n) }
        }
        out.single("parley_websocket_messages_received_total", .counter, help: "WebSocket data messages received.", sum { $0.messagesIn })
        out.single("parley_websocket_messages_sent_total", .counter, help: "WebSocket data messages sent.", sum { $0.messagesOut })
        out.single("parley_network_received_bytes_total", .counter, help: "Bytes read from client sockets.", sum { $0.bytesIn })
        out.single("parley_network_sent_bytes_total", .counter, help: "Bytes written to client sockets.", sum { $0.bytesOut })

        let accounted = sum { $0.accountedBytes }
        let resident = ProcessFigures.resident
        let startupResidentBytes = ProcessFigures.startupResident
        out.single("parley_accounted_bytes", .gauge, help: "Heap bytes held by connections, as counted by their memory accounts.", accounted)
        out.single("parley_process_resident_memory_bytes", .gauge, help: "Resident set size of the process.", resident)
        out.single("parley_process_proportional_memory_bytes", .gauge,
                   help: "Proportional set size (PSS) of the process: shared pages divided among the processes sharing them, so that it sums across workers.",
                   ProcessFigures.proportional)
        out.family("parley_process_cpu_seconds_total", .counter, help: "User and system CPU time of the process (summed over the workers with --workers).")
        out.sample("parley_process_cpu_seconds_total", ProcessFigures.cpuSeconds)
        out.single("parley_process_startup_resident_memory_bytes", .gauge, help: "Resident set size once the loops had started, before any connection.",
                   startupResidentBytes)
        out.single("parley_resident_bytes_per_connection", .gauge, help: "(resident - startup resident) / open WebSocket sessions; 0 with none open.",
                   sessions > 0 ? max(0, resident - startupResidentBytes) / sessions : 0)
        out.single("parley_accounted_bytes_per_connection", .gauge, help: "Accounted bytes / open WebSocket sessions; 0 with none open.",
                   sessions > 0 ? accounted / sessions : 0)

        renderTLS(into: &out)
        Histogram.render(loops.map(\.lag), into: &out)
        out += renderSessions() + renderSpeech()
        return out.text
    }
}
