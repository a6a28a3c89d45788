import ArgumentParser
import Codec
import JSON
import Loop
#if canImport(Glibc)
import Glibc
#endif

/// `parley-load webrtc`: many WebRTC calls at once on `POST /v1/realtime/calls`, each made as a
/// browser makes one, from Parley's own ICE, DTLS, SRTP and SCTP in their client roles.
struct WebRTCCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webrtc",
        abstract: "Hold N WebRTC calls (offer, ICE, DTLS, SRTP, the oai-events channel), a share of the callers talking in turns; time the set-up and measure how far the server runs behind real time.",
        discussion: """
            Each call posts an SDP offer (Opus 111, a data channel), checks ICE against the answer's \
            candidate, runs DTLS as the client, opens SCTP and oai-events, and asks for a reply \
            (response.create; --no-greet leaves that out). The --talking share then speak --input as \
            20 ms Opus packets (encoded once here) in turns: the recording, the reply (until \
            output_audio_buffer.stopped), --pause, again. The others send nothing (DTX) but consent \
            checks every 2.5 s. Set-up times run from the offer's POST. The server's lag is its \
            parley_audio_input_lag_seconds over the measured window, against --lag-budget-ms at p99. \
            One process, one thread, one UDP socket per call.
            """)

    @Argument(help: "Calls to open (one process: at most 19,000, one UDP socket each).")
    var calls: Int

    @Option(help: "The share of callers talking in turns (the rest silent).")
    var talking = 0.2

    @Option(help: "The server, http:// on a loopback address.")
    var url = "http://127.0.0.1:8080"

    @Option(help: "An API key or ek_ client secret for Authorization: Bearer (none for a server without keys).")
    var key: String?

    @Option(help: "Speech the talking callers say (WAV, any rate, mono or stereo).")
    var input: String

    @Option(help: "Seconds between the end of a reply and the next turn.")
    var pause = 1.5

    @Option(help: "Seconds a reply may take to start, or to finish, before the caller speaks again anyway.")
    var replyTimeout = 15.0

    @Option(help: "Calls opened a second.")
    var rate = 50.0

    @Option(help: "Offers posted at once, at most.")
    var offersInFlight = 16

    @Flag(inversion: .prefixedNo, help: "Whether each call asks for a reply once its channel opens (times offer → first reply audio).")
    var greet = true

    @Option(help: "Seconds of streaming after every call is up, before measuring.")
    var warmup = 5.0

    @Option(help: "Seconds measured.")
    var duration = 20.0

    @Option(help: "Seconds allowed for every call to come up.")
    var connectTimeout = 60.0

    @Option(help: "The server's process id, for its CPU and memory from /proc.")
    var serverPid: Int32?

    @Option(help: "The p99 of the server's input lag that passes, in milliseconds.")
    var lagBudgetMs = 20.0

    @Option(help: "Also write the summary as JSON to this file.")
    var json: String?

    func validate() throws {
        guard (1...19_000).contains(calls) else { throw ValidationError("calls must be 1...19000 (one process)") }
        guard (0...1).contains(talking) else { throw ValidationError("--talking is a share, 0...1") }
        guard url.hasPrefix("http://") else { throw ValidationError("--url must be http:// (the offer is posted in the clear)") }
        guard rate > 0, (1...1000).contains(offersInFlight) else { throw ValidationError("--rate > 0 and --offers-in-flight 1...1000") }
        guard warmup >= 0, warmup <= 600, duration > 0, duration <= 3600 else { throw ValidationError("--warmup 0...600 and --duration (0, 3600]") }
    }

    func run() throws {
        signal(SIGPIPE, SIG_IGN)
        let target = try LoadTarget("ws://" + url.dropFirst("http://".count))
        DescriptorLimit.raiseToHard()
        let packets = try Self.opusPackets(input)
        let talkers = Int((Double(calls) * talking).rounded())
        print("parley-load webrtc: \(Format.grouped(calls)) calls to \(url)/v1/realtime/calls, \(Format.grouped(talkers)) talking \(input) (\(packets.count) Opus packets a turn, \(Format.fixed(Double(packets.count) / 50, 1)) s with the quiet around it), the rest silent; \(greet ? "a reply asked for on every call" : "no greeting")")
        Console.flush()

        let before: ServerMetrics
        do { before = try ServerMetrics.fetch(from: target) } catch { throw LoadFailure.unreachable(error, target) }
        let residentBefore = serverPid.flatMap { ProcessFigures(pid: $0).residentBytes } ?? before.residentBytes
        let run = try WebRTCLoadRun(.init(target: target, calls: calls, talking: talkers, packets: packets, pause: pause,
                                          replyTimeout: replyTimeout, openRate: rate, offersInFlight: offersInFlight,
                                          bearer: key, greet: greet))
        let progress = Progress()
        run.open(deadline: MonotonicClock.nanoseconds() + MonotonicClock.nanoseconds(connectTimeout), progress: progress)
        run.stream(until: MonotonicClock.nanoseconds() + MonotonicClock.nanoseconds(warmup), measuring: false, progress: progress)

        let window = MeasuredWindow(target: target, serverPid: serverPid, duration: duration) { deadline, measuring, done in
            run.stream(until: deadline, measuring: measuring, progress: progress, until: done)
        }
        run.stopSpeaking()
        run.hangUp()
        progress.finish()

        let summary = WebRTCSummary(
            calls: calls, talking: talkers, run: run, window: window, residentBefore: residentBefore,
            accountedBytes: window.end?.value("parley_accounted_bytes"), callsOpenAtServer: window.end?.value("parley_webrtc_calls_open"),
            lag: window.histogram(VoiceSummary.lagName), lagBudget: lagBudgetMs / 1000)
        print(summary.text)
        if let json { try TextFile.write(summary.json.pretty + "\n", to: json) }
        if !summary.passed { throw ExitCode.failure }
    }

    /// A turn as 20 ms Opus packets at 48 kHz mono, encoded once for every caller: half a second of
    /// silence, the recording, and a second of silence. A microphone sends its room's quiet around
    /// the words (DTX stops the packets only between turns), and server VAD needs it: the quiet
    /// before sets the energy detector's floor, the quiet after ends the turn.
    static func opusPackets(_ path: String) throws -> [[UInt8]] {
        let wav = try WAVFile.read(path: path)
        let mono = stride(from: 0, to: wav.samples.count, by: wav.channels).map { wav.samples[$0] }
        let speech = wav.sampleRate == 48_000 ? mono : try Resampler(from: wav.sampleRate, to: 48_000, quality: .desktop).process(mono)
        let pcm = [Int16](repeating: 0, count: 24_000) + speech + [Int16](repeating: 0, count: 48_000)
        let encoder = try OpusEncoder(format: .voice, settings: .init(bitrate: 32_000))
        var packets: [[UInt8]] = []
        for start in stride(from: 0, to: pcm.count - 959, by: 960) { packets.append(try encoder.encode(Array(pcm[start..<(start + 960)]))) }
        guard !packets.isEmpty else { throw ValidationError("\(path) holds less than 20 ms of audio") }
        return packets
    }
}
