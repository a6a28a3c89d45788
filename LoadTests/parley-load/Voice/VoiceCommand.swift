import ArgumentParser
import JSON
import Codec
import Loop
#if canImport(Glibc)
import Glibc
#endif

/// `parley-load voice`: many sessions, some of them speaking Opus in real time.
struct VoiceCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "voice",
        abstract: "Hold N sessions on /ws of which K stream Opus at real-time pace; measure how far the server runs behind real time.",
        discussion: """
            Each speaking session sends one 20 ms Opus packet every 20 ms, looping the recording given \
            with --input (a WAV file; `espeak-ng -w speech.wav "..."` makes one), so the server decodes, \
            and runs every frame through VAD and turn-taking. The packets are wideband (16 kHz) by default, \
            as Parley's own clients send; --opus fullband sends 48 kHz packets, which cost the server's \
            decoder about twice as much. The server's lag behind real time \
            is its parley_audio_input_lag_seconds histogram over the measured window; the client's own \
            lateness against the 20 ms schedule is shown beside it, with its CPU. One client process.
            """)

    @Argument(help: "Sessions to open (one process: at most about 19,000).")
    var sessions: Int

    @Option(help: "How many of them speak.")
    var speaking = 500

    @Option(help: "The /ws endpoint; loopback addresses only.")
    var url = "ws://127.0.0.1:8080/ws"

    @OptionGroup var stream: StreamOptions



    @Option(help: "The audio band the Opus packets carry: wideband (16 kHz, as Parley's own clients send) or fullband (48 kHz).")
    var opus: OpusProfile = .wideband

    @Option(help: "Opus bitrate, bits per second (default: 24000 wideband, 32000 fullband).")
    var bitrate: Int?








    func validate() throws {
        guard (1...19_000).contains(sessions) else { throw ValidationError("sessions must be 1...19000 (one client process)") }
        guard (0...sessions).contains(speaking) else { throw ValidationError("--speaking must be 0...sessions") }
        if let bitrate, !(6_000...128_000).contains(bitrate) { throw ValidationError("--bitrate must be 6000...128000") }
    }

    func run() throws {
        signal(SIGPIPE, SIG_IGN)
        let target = try LoadTarget(url, caFile: stream.ca)
        DescriptorLimit.raiseToHard()
        let speech = try CodecInput(wavPath: stream.input, profile: opus, bitrate: bitrate)
        let silence = try speech.silencePacket()
        let packets = speech.packets + Array(repeating: silence, count: Int((stream.pause * 50).rounded()))
        print("parley-load voice: \(Format.grouped(sessions)) sessions to \(target), \(Format.grouped(speaking)) speaking \(stream.input) (\(Format.fixed(speech.seconds, 1)) s and \(Format.fixed(stream.pause, 1)) s of silence, \(packets.count) Opus packets, \(opus.description) at \(speech.bitrate / 1000) kbit/s, looped)")
        Console.flush()
        let summary = try stream.measurement(target)
            .run(.init(target: target, sessions: sessions, speaking: speaking, packets: packets, connectTimeout: stream.connectTimeout, sources: stream.sources),
                 describe: { VoiceSummary.Run(kind: "voice", detail: "Opus \(opus.rawValue) \(speech.bitrate / 1000) kbit/s", sessions: sessions, speakingAsked: speaking,
                                              fields: [("opus", .string(opus.rawValue)), ("opus_bitrate", .int(speech.bitrate))]) })
        try stream.finish(summary)
    }
}

/// What `voice` (or `calls`) measured, as text and JSON.
struct VoiceSummary {
    /// What was run: `voice` or `calls`, the audio it streamed, and what was asked for.
    struct Run {
        let kind: String
        let detail: String
        let sessions: Int
        let speakingAsked: Int
        /// More for the JSON report (the Opus profile and bitrate, which the report's tables read).
        var fields: [(String, JSON)] = []
    }

    let target: LoadTarget
    let run: Run
    /// Sessions that sent a frame every 20 ms (for calls, the silent ones too).
    let streams: Int
    let speaking: Int
    let ready: Int
    let before: ServerMetrics
    let start: ServerMetrics?
    let end: ServerMetrics?
    let measuredSeconds: Double
    let framesSent: Int
    let framesSentInAll: Int
    let final: ServerMetrics?
    let sendLateness: LatencyRecorder
    let speechStarted: Int
    let speechStopped: Int
    let responsesDone: Int
    let errors: Int
    /// The server's CPU while measuring, in cores, where it could be read.
    let serverCores: Double?
    /// The share of the machine's CPU time the hypervisor took while measuring.
    let steal: Double?
    let clientCores: Double
    let clientCPU: CPUTime

    static let lagName = "parley_audio_input_lag_seconds"
    /// The target: the server's p99 lag behind real time.
    static let lagBudget = 0.005

    var lag: ServerHistogram? { window(Self.lagName) }

    /// Frames the server processed over the whole run (its counter is process-wide: a server
    /// with no other audio clients is assumed).
    var framesProcessed: Int? {
        guard let final else { return nil }
        let name = "parley_audio_input_frames_total"
        let label = #"result="processed""#
        return Int((final.value(name, labels: label) ?? 0) - (before.value(name, labels: label) ?? 0))
    }

    var problems: [String] {
        var out: [String] = []
        if ready < run.sessions { out.append("only \(ready) of \(run.sessions) sessions became ready") }
        if speaking < run.speakingAsked { out.append("only \(speaking) of \(run.speakingAsked) speakers could start") }
        guard let lag, let p99 = lag.percentileBound(99) else { return out + ["no server lag measured (is this a Parley server with /ws?)"] }
        if p99 > Self.lagBudget { out.append("the server's p99 lag behind real time is \(lag.formatPercentile(99)), over the \(Int(Self.lagBudget * 1000)) ms budget") }
        if let processed = framesProcessed, processed < framesSentInAll {
            out.append("the server processed \(processed) of the \(framesSentInAll) frames sent")
        }
        return out
    }

    var passed: Bool { problems.isEmpty }

    /// A server histogram over the measured window.
    func window(_ name: String) -> ServerHistogram? {
        guard let start, let end, let a = ServerHistogram(name, in: start), let b = ServerHistogram(name, in: end) else { return nil }
        return b.since(a)
    }

    /// What a server with speech on (Parley's recogniser and synthesiser) says of the window.
    var speech: (transcription: ServerHistogram?, voiceToVoice: ServerHistogram?, recognitionRTF: Double?, overloaded: Int?) {
        let overloaded = start.flatMap { a in end.map { b in Int((b.value("parley_speech_overloaded_total") ?? 0) - (a.value("parley_speech_overloaded_total") ?? 0)) } }
        return (window("parley_transcription_seconds"), window("parley_voice_to_voice_seconds"),
                window("parley_speech_recognition_real_time_factor")?.mean, end?.value("parley_speech_overloaded_total") == nil ? nil : overloaded)
    }

    private var speechLines: [String] {
        let s = speech
        var lines: [String] = []
        if let t = s.transcription, t.observations > 0 {
            lines.append(Format.row("transcription", "speech_stopped → final text p50 \(t.formatPercentile(50))  p99 \(t.formatPercentile(99))  (\(t.observations) turns; recognition real-time factor \(s.recognitionRTF.map { Format.fixed($0, 2) } ?? "n/a"))"))
        }
        if let v = s.voiceToVoice, v.observations > 0 {
            lines.append(Format.row("voice to voice", "speech_stopped → first reply audio p50 \(v.formatPercentile(50))  p99 \(v.formatPercentile(99))  (\(v.observations) replies)"))
        }
        if let overloaded = s.overloaded, overloaded > 0 { lines.append(Format.row("overloaded", "\(overloaded) turns refused by the speech workers")) }
        return lines
    }

    var text: String {
        var lines = ["", "== \(run.kind)  (\(Format.grouped(run.sessions)) sessions to \(target), \(Format.grouped(speaking)) speaking in real time, \(run.detail))"]
        lines.append(Format.row("sessions ready", "\(Format.grouped(ready)) of \(Format.grouped(run.sessions))"))
        let expected = Double(streams) * 50 * measuredSeconds
        lines.append(Format.row("frames sent", "\(Format.grouped(framesSent)) in \(Format.fixed(measuredSeconds, 1)) s = \(Format.grouped(Int(Double(framesSent) / measuredSeconds))) /s  (real time for \(streams) streams: \(Format.grouped(Int(expected / measuredSeconds))) /s)"))
        let h = sendLateness
        lines.append(Format.row("client sends", h.count == 0 ? "none measured" : "late against the 20 ms schedule by p50 \(LatencyRecorder.format(nanoseconds: h.percentile(50)))  p99 \(LatencyRecorder.format(nanoseconds: h.percentile(99)))  max \(LatencyRecorder.format(nanoseconds: h.maximum))"))
        if let lag {
            lines.append(Format.row("server lag", "p50 \(lag.formatPercentile(50))  p99 \(lag.formatPercentile(99))  p99.9 \(lag.formatPercentile(99.9))  behind real time, \(Format.grouped(lag.observations)) frames (\(Self.lagName))"))
        } else {
            lines.append(Format.row("server lag", "not measured: the server has no \(Self.lagName)"))
        }
        lines += speechLines
        if let processed = framesProcessed {
            lines.append(Format.row("frames processed", "\(Format.grouped(processed)) of \(Format.grouped(framesSentInAll)) sent in the whole run (dropped or never processed: \(Format.grouped(max(0, framesSentInAll - processed))))"))
        }
        lines.append(Format.row("turns", "speech_started \(Format.grouped(speechStarted))  speech_stopped \(Format.grouped(speechStopped))  response.done \(Format.grouped(responsesDone))  errors \(errors)"))
        if let end {
            let rss = end.residentBytes, startup = end.startupResidentBytes
            lines.append(Format.row("server RSS", "\(Format.bytes(rss))  (startup \(Format.bytes(startup)); \(Format.grouped(Int(((rss - startup) / Double(max(1, ready))).rounded()))) B per session)"))
        }
        lines.append(Format.row("server CPU", serverCores.map { "\(Format.fixed($0, 2)) of \(Cores.online) cores while measuring" } ?? "not measured (give --server-pid for a server whose /metrics does not say)"))
        lines.append(Format.row("client CPU", "\(Format.fixed(clientCores, 2)) of \(Cores.online) cores while measuring  (\(Format.fixed(clientCPU.total, 2)) s over the run)"))
        if let steal { lines.append(Format.row("steal", "\(Format.fixed(steal * 100, 1)) % of the machine's CPU time went to other guests of its host while measuring")) }
        lines.append("")
        lines.append(passed ? "PASS: every stream went in real time, server p99 lag within \(Int(Self.lagBudget * 1000)) ms" : "FAIL: " + problems.joined(separator: "; "))
        return lines.joined(separator: "\n")
    }

    private func speechBounds(_ h: ServerHistogram?) -> JSON {
        guard let h, h.observations > 0 else { return .null }
        func b(_ p: Double) -> JSON { h.percentileBound(p).map { $0.isFinite ? JSON.number($0) : .string("+Inf") } ?? .null }
        return .object([("p50", b(50)), ("p99", b(99)), ("count", .int(h.observations))])
    }

    var json: JSON {
        func bound(_ p: Double) -> JSON { lag?.percentileBound(p).map { $0.isFinite ? JSON.number($0) : .string("+Inf") } ?? .null }
        func optional(_ value: Double?) -> JSON { value.map(JSON.number) ?? .null }
        let lateness: JSON = .object([("p50", .number(Double(sendLateness.percentile(50)))), ("p99", .number(Double(sendLateness.percentile(99)))),
                                      ("max", .number(Double(sendLateness.maximum)))])
        let run: [(String, JSON)] = [
            ("command", .string(run.kind)),
            ("url", .string(target.url)),
            ("sessions", .int(run.sessions)),
            ("ready", .int(ready)),
            ("speaking", .int(speaking)),
            ("streams", .int(streams)),
            ("audio", .string(run.detail)),
        ] + run.fields + [
            ("measured_seconds", .number(measuredSeconds)),
            ("frames_sent", .int(framesSent)),
            ("frames_sent_in_all", .int(framesSentInAll)),
            ("frames_processed_in_all", framesProcessed.map { .int($0) } ?? .null),
            ("client_send_lateness_ns", lateness),
            ("server_lag_seconds_bound", .object([("p50", bound(50)), ("p99", bound(99)), ("p99_9", bound(99.9))])),
            ("speech_started", .int(speechStarted)),
            ("speech_stopped", .int(speechStopped)),
            ("responses_done", .int(responsesDone)),
            ("errors", .int(errors)),
        ]
        let speech = self.speech
        let figures: [(String, JSON)] = [
            ("client_cores_while_measuring", .number(clientCores)),
            ("server_cores_while_measuring", optional(serverCores)),
            ("steal_fraction_while_measuring", optional(steal)),
            ("transcription_seconds_bound", speechBounds(speech.transcription)),
            ("voice_to_voice_seconds_bound", speechBounds(speech.voiceToVoice)),
            ("recognition_real_time_factor", optional(speech.recognitionRTF)),
            ("speech_overloaded", speech.overloaded.map { .int($0) } ?? .null),
            ("server_resident_bytes", optional(end?.residentBytes)),
            ("passed", .bool(passed)),
            ("problems", .array(problems.map(JSON.string))),
        ]
        return .object(run + figures)
    }
}
