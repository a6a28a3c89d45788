import ArgumentParser

/// What `voice` and `calls` share: the recording streamed, the measured window, the connections'
/// sources, and where the report goes.
struct StreamOptions: ParsableArguments {
    @Option(help: "PEM CA certificates trusted for a wss:// URL, besides the system store.")
    var ca: String?

    @Option(help: "Speech to stream (WAV, any rate, mono or stereo).")
    var input: String

    @Option(help: "Seconds of silence streamed after each pass through the recording, so that VAD ends a turn there.")
    var pause = 1.0

    @Option(help: "Seconds of streaming before measuring starts.")
    var warmup = 5.0

    @Option(help: "Seconds measured.")
    var duration = 20.0

    @Option(help: "Seconds allowed for every session to open (and say session.created, on /ws).")
    var connectTimeout = 60.0

    @Option(help: "Source addresses to connect from: 127.0.0.2 up to 127.0.0.(1 + K).")
    var sources = 16

    @Option(help: "The server's process id, to read its CPU from /proc (for a server whose /metrics does not say).")
    var serverPid: Int32?

    @Option(help: "Also write the summary as JSON to this file.")
    var json: String?

    func validate() throws {
        guard warmup >= 0, warmup <= 600, duration > 0, duration <= 3600 else { throw ValidationError("--warmup 0...600 and --duration (0, 3600]") }
    }

    var measurement: (LoadTarget) -> VoiceMeasurement {
        { VoiceMeasurement(target: $0, warmup: warmup, duration: duration, serverPid: serverPid) }
    }

    /// Prints the summary, writes its JSON if asked, and fails the command if it did not pass.
    func finish(_ summary: VoiceSummary) throws {
        print(summary.text)
        if let json { try TextFile.write(summary.json.pretty + "\n", to: json) }
        if !summary.passed { throw ExitCode.failure }
    }
}
