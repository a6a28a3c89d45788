import ParleyMetrics

/// Parley's side: its own Counter, Histogram, MetricFamily, ComputedFamily, MetricsRegistry and
/// PrometheusText (compiled from Sources/Metrics through the ParleySources symlink), arranged as
/// Sources/Server (LoopMetrics, ServerMetrics), Sources/Session/SessionMetrics.swift,
/// Sources/Models/UpstreamMetrics.swift and SpeechMetrics.swift arrange them: the server's
/// counters and the iteration-lag histogram per loop, summed at scrape time; the session and speech
/// series process-wide; every family declared in one registry, which the scrape renders. The
/// declarations below follow those files, with /proc readings replaced by constants
/// (ProcessFigures).
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
        /// The loop's own iteration-lag histogram (Sources/Loop/LoopHandle.swift), summed by the server.
        let lag = Histogram(name: "parley_loop_iteration_seconds",
                            help: "Time an event-loop iteration spent handling ready events and timers: how late the next event can be served.",
                            bounds: [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1], registry: nil)
    }

    let registry = MetricsRegistry()
    let loops = [LoopMetrics(), LoopMetrics()]
    let messagesInLoop0: Counter
    let tlsReloads = Counter()
    let tlsReloadFailures = Counter()

    // SessionMetrics and UpstreamMetrics.
    let sessionsOpen: MetricFamily
    let turns: MetricFamily
    let responses: LabelledFamily<ResponseStatus>
    let firstToken: Histogram
    let serverAdded: Histogram
    let speechToResponse: Histogram
    let audioFrames: LabelledFamily<FrameResult>
    let audioLag: Histogram

    // SpeechMetrics.
    static let ratioBounds: [Double] = [0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 5]
    let recognitionRealTimeFactor: Histogram
    let synthesisRealTimeFactor: Histogram
    let encodingRealTimeFactor: Histogram
    let voiceToVoice: Histogram
    let transcription: Histogram
    let recognizersBusy: MetricFamily
    let overloaded: MetricFamily

    init() {
        messagesInLoop0 = loops[0].messagesIn
        sessionsOpen = MetricFamily(name: "parley_sessions_open", help: "Realtime sessions open (/v1/realtime and /ws).", kind: .gauge, registry: registry)
        turns = MetricFamily(name: "parley_session_turns_total", help: "Responses started (turns).", registry: registry)
        responses = LabelledFamily(name: "parley_session_responses_total", help: "Responses finished, by status.", registry: registry)
        firstToken = Histogram(name: "parley_upstream_first_token_seconds",
                               help: "From sending a request to an upstream model to its first text delta.",
                               bounds: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30], registry: registry)
        serverAdded = Histogram(name: "parley_server_added_latency_seconds",
                                help: "From an upstream delta's bytes being read to the client's frame being written: what Parley adds.", registry: registry)
        speechToResponse = Histogram(name: "parley_speech_stopped_to_response_created_seconds",
                                     help: "From speech_stopped to response.created (transcription and turn-taking).",
                                     bounds: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5], registry: registry)
        audioFrames = LabelledFamily(name: "parley_audio_input_frames_total", help: "Audio frames (Opus packets, or pcm16 appends) received, by outcome.",
                                     registry: registry)
        audioLag = Histogram(name: "parley_audio_input_lag_seconds",
                             help: "How far behind real time each audio frame was when its processing (decode, resampling, VAD, turn-taking) ended, by the stream's own clock; meaningful for clients that stream at real-time pace.",
                             bounds: [0.0001, 0.00025, 0.0005, 0.001, 0.0015, 0.002, 0.003, 0.004, 0.005, 0.0075, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 2.5, 10],
                             registry: registry)
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
        _ = ComputedFamily(name: "parley_speech_queue_depth", help: "Speech jobs waiting for a worker.", kind: .gauge, registry: registry) {
            ProcessFigures.speechQueueDepth
        }
        _ = ComputedFamily(name: "parley_speech_workers_busy", help: "Speech workers running a job now.", kind: .gauge, registry: registry) {
            ProcessFigures.speechWorkersBusy
        }
        declareServer()
    }

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
        audioFrames.add(1, .processed)
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

    /// As a typed family is counted: the label is a case, its series found among the family's.
    func responseDone(loop: Int, status: Int) { responses.add(1, ResponseStatus.ordered[status]) }

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
    func labelledCounterAdd() { audioFrames.add(1, .processed) }
    func histogramObserve(nanoseconds: UInt64) { serverAdded.observe(nanoseconds: nanoseconds) }

    // MARK: The scrape: the server's families as ServerMetrics declares them, then the registry.

    /// As ServerMetrics.declare, over this side's loops.
    private func declareServer() {
        let loops = loops, tlsReloads = tlsReloads, tlsReloadFailures = tlsReloadFailures
        @Sendable func sum(_ pick: (LoopMetrics) -> Counter) -> Int { loops.reduce(0) { $0 + pick($1).current } }
        @Sendable func sessions() -> Int { endpointNames.indices.dropFirst().reduce(0) { n, i in n + sum { $0.open[i] } } }
        func gauge(_ name: String, _ help: String, _ value: @escaping @Sendable () -> Int) {
            _ = ComputedFamily(name: name, help: help, kind: .gauge, registry: registry, value: value)
        }
        func counter(_ name: String, _ help: String, _ pick: @escaping @Sendable (LoopMetrics) -> Counter) {
            _ = ComputedFamily(name: name, help: help, kind: .counter, registry: registry) { $0.add(sum(pick)) }
        }
        @Sendable func closeName(_ index: Int) -> String {
            switch index {
            case 0..<16: return String(1000 + index)
            case 16: return "other"
            default: return "none"
            }
        }

        _ = ComputedFamily(name: "parley_connections_open", help: "Open connections by endpoint (http: not upgraded).", kind: .gauge, registry: registry) { samples in
            for (i, name) in endpointNames.enumerated() { samples.add(Label<EndpointName>(name), sum { $0.open[i] }) }
        }
        counter("parley_connections_accepted_total", "Connections accepted.") { $0.accepted }
        _ = ComputedFamily(name: "parley_connections_refused_total", help: "Connections turned away, by reason.", kind: .counter, registry: registry) { samples in
            for (i, reason) in refusalReasons.enumerated() { samples.add(Label<ReasonName>(reason), sum { $0.refused[i] }) }
        }
        _ = ComputedFamily(name: "parley_connections_closed_total",
                           help: "Connections closed, by WebSocket close code (1006: dropped without a close frame; none: plain HTTP).",
                           kind: .counter, registry: registry) { samples in
            for i in 0..<18 {
                let n = sum { $0.closed[i] }
                if n > 0 || i == 0 { samples.add(Label<CodeName>(closeName(i)), n) }
            }
        }
        counter("parley_websocket_messages_received_total", "WebSocket data messages received.") { $0.messagesIn }
        counter("parley_websocket_messages_sent_total", "WebSocket data messages sent.") { $0.messagesOut }
        counter("parley_network_received_bytes_total", "Bytes read from client sockets.") { $0.bytesIn }
        counter("parley_network_sent_bytes_total", "Bytes written to client sockets.") { $0.bytesOut }

        gauge("parley_accounted_bytes", "Heap bytes held by connections, as counted by their memory accounts.") { sum { $0.accountedBytes } }
        gauge("parley_process_resident_memory_bytes", "Resident set size of the process.") { ProcessFigures.resident }
        gauge("parley_process_proportional_memory_bytes",
              "Proportional set size (PSS) of the process: shared pages divided among the processes sharing them, so that it sums across workers.") {
            ProcessFigures.proportional
        }
        _ = ComputedFamily(name: "parley_process_cpu_seconds_total", help: "User and system CPU time of the process (summed over the workers with --workers).",
                           kind: .counter, registry: registry) { $0.add(ProcessFigures.cpuSeconds) }
        gauge("parley_process_startup_resident_memory_bytes", "Resident set size once the loops had started, before any connection.") {
            ProcessFigures.startupResident
        }
        gauge("parley_resident_bytes_per_connection", "(resident - startup resident) / open WebSocket sessions; 0 with none open.") {
            let sessions = sessions()
            return sessions > 0 ? max(0, ProcessFigures.resident - ProcessFigures.startupResident) / sessions : 0
        }
        gauge("parley_accounted_bytes_per_connection", "Accounted bytes / open WebSocket sessions; 0 with none open.") {
            let sessions = sessions()
            return sessions > 0 ? sum { $0.accountedBytes } / sessions : 0
        }

        _ = ComputedFamily(name: "parley_tls_handshakes_total", help: "TLS handshakes with clients, by how they ended.", kind: .counter, registry: registry) { samples in
            for (i, result) in tlsResults.enumerated() { samples.add(Label<ResultName>(result), sum { $0.tlsHandshakes[i] }) }
        }
        gauge("parley_tls_handshakes_in_progress", "TLS handshakes under way (capped by --max-tls-handshakes).") { sum { $0.tlsHandshakesInProgress } }
        _ = ComputedFamily(name: "parley_tls_certificate_reloads_total", help: "Certificate reloads (SIGHUP), by outcome.", kind: .counter, registry: registry) { samples in
            samples.add(Label<ResultName>("ok"), tlsReloads.current)
            samples.add(Label<ResultName>("failed"), tlsReloadFailures.current)
        }
        gauge("parley_tls_certificate_expiry_timestamp_seconds", "When the served certificate expires (Unix time).") { ProcessFigures.certificateNotAfter }
        _ = SummedHistogram(loops.map(\.lag), registry: registry)
    }

    func scrape() -> String { registry.render() }
}

/// Session's labels as typed families declare them (the same values as `statuses` and the frames'
/// results).
enum ResponseStatus: String, CaseIterable, MetricLabel {
    static let labelName = "status"
    case completed, cancelled, failed, incomplete
    /// Made once: a synthesised `allCases` may build its array at each call, which the workload
    /// would count as an allocation of the metrics' own.
    static let ordered = Array(allCases)
}

enum FrameResult: String, CaseIterable, MetricLabel {
    static let labelName = "result"
    case processed, rejected
}

/// The server's labels, whose values ServerMetrics knows only at scrape (or keeps as its own
/// enumerations): one label name each, a value each sample.
protocol LabelName { static var name: String { get } }
enum EndpointName: LabelName { static let name = "endpoint" }
enum ReasonName: LabelName { static let name = "reason" }
enum CodeName: LabelName { static let name = "code" }
enum ResultName: LabelName { static let name = "result" }

struct Label<Name: LabelName>: MetricLabel {
    static var labelName: String { Name.name }
    let labelValue: String
    init(_ value: String) { labelValue = value }
}
