import ArgumentParser
import Codec
import JSON
import Server
#if canImport(Glibc)
import Glibc
#endif

/// `parley talk URL`: a conversation from the terminal, on `/ws`. One text turn (`--text`), a
/// spoken one (`--audio`, streamed at real-time pace as Opus), or a prompt that takes a turn per
/// line. The user's words and the streaming reply are printed as they arrive. A dropped connection
/// is resumed (TalkResume): the session comes back with the events missed.
struct TalkCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "talk",
        abstract: "Talk to a Parley server from the terminal.",
        discussion: """
            Exit status: 0 every turn was answered; 1 the server reported an error or a reply did not \
            complete; 3 cannot connect, or the server refused the session; 4 the server closed the \
            connection; 5 no answer in time (--timeout); 6 the audio file cannot be read or written; \
            64 bad arguments.
            """)

    @Argument(help: "The server, e.g. ws://127.0.0.1:8080 (the path defaults to /ws; http:// works too).")
    var url: String

    @Option(help: "Say this, as one text turn, and exit after the reply.")
    var text: String?

    @Option(help: "Say this recording (.wav, or .opus from opusenc), streamed as Opus at real-time pace.")
    var audio: String?

    @Option(help: "Write the spoken reply to this WAV file (24 kHz mono).")
    var saveReply: String?

    @Flag(help: "Print the server's events as JSON, one per line, instead of the conversation.")
    var json = false

    @Option(help: "Seconds to wait for each reply.")
    var timeout = 60.0

    enum Exit: Int32 {
        case failed = 1, connect = 3, closed = 4, timedOut = 5, file = 6
    }

    func validate() throws {
        guard text == nil || audio == nil else { throw ValidationError("give --text or --audio, not both") }
        guard timeout > 0 else { throw ValidationError("--timeout must be positive") }
        _ = try target()
    }

    /// host, port, path from the URL.
    func target() throws -> (host: String, port: Int, path: String) {
        var rest = Substring(url)
        for scheme in ["ws://", "http://"] where rest.hasPrefix(scheme) { rest = rest.dropFirst(scheme.count) }
        if rest.hasPrefix("wss://") || rest.hasPrefix("https://") { throw ValidationError("parley talk speaks ws:// only for now; wss:// is not supported yet") }
        guard !rest.contains("://") else { throw ValidationError("\(url) is not a ws:// or http:// URL") }
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        // The page's own address (http://host:port/) means its session endpoint.
        let authority = rest[..<slash], path = rest[slash...].count <= 1 ? "/ws" : String(rest[slash...])
        let parts = authority.split(separator: ":")
        guard let host = parts.first, !host.isEmpty else { throw ValidationError("\(url) has no host") }
        let port = parts.count > 1 ? Int(parts[1]) : 80
        guard let port, (1...65535).contains(port) else { throw ValidationError("\(url) has no valid port") }
        return (String(host), port, path)
    }

    func run() throws {
        signal(SIGPIPE, SIG_IGN)
        let (host, port, path) = try target()
        var session = TalkSession(json: json, timeout: timeout, keepAudio: saveReply != nil)
        do {
            // The audio is read before connecting, so a bad file costs no session.
            let packets = try audio.map(Self.packets)
            try session.open(host: host, port: port, path: path)
            if let packets {
                try session.speak(packets)
            } else if let text {
                try session.say(text)
            } else {
                while true {
                    if !json { print("> ", terminator: ""); fflush(nil) }
                    guard let line = readLine() else { break }
                    if !line.isEmpty { try session.say(line) }
                }
            }
            session.close()
            if let saveReply { try session.saveReply(to: saveReply) }
        } catch let failure as TalkSocket.Failure {
            Self.fail(failure.description, code: Self.exit(for: failure))
        } catch let failure as TalkSession.TurnFailure {
            Self.fail(failure.description, code: .failed)
        } catch let error as AudioFileError {
            Self.fail("\(error)", code: .file)
        }
        if session.failedTurns > 0 { throw ExitCode(Exit.failed.rawValue) }
    }

    static func exit(for failure: TalkSocket.Failure) -> Exit {
        switch failure {
        case .connect, .refused: .connect
        case .closed: .closed
        case .timedOut: .timedOut
        }
    }

    static func fail(_ message: String, code: Exit) -> Never {
        FileHandleStandardError.write("parley talk: \(message)\n")
        Glibc.exit(code.rawValue)
    }

    /// The recording as 20 ms Opus packets, then 1.5 s of silence so that the server's VAD ends
    /// the turn.
    static func packets(_ path: String) throws(AudioFileError) -> [[UInt8]] {
        let encoder = try? OpusEncoder(format: AudioFormat(sampleRate: .hz16000, channels: .mono), settings: .init(bitrate: 24_000))
        guard let encoder, let silence = try? encoder.encode([Int16](repeating: 0, count: 320)) else { return [] }
        let tail = Array(repeating: silence, count: 75)
        if path.hasSuffix(".opus") || path.hasSuffix(".ogg") {
            return try OggOpusFile.read(path: path).packets + tail
        }
        let wav = try WAVFile.read(path: path)
        let mono = stride(from: 0, to: wav.samples.count, by: wav.channels).map { wav.samples[$0] }
        let pcm = wav.sampleRate == 16_000 ? mono : ((try? Resampler(from: wav.sampleRate, to: 16_000).process(mono)) ?? [])
        var out: [[UInt8]] = []
        for start in stride(from: 0, to: pcm.count, by: 320) {
            var frame = Array(pcm[start..<min(pcm.count, start + 320)])
            frame += [Int16](repeating: 0, count: 320 - frame.count)
            if let packet = try? encoder.encode(frame) { out.append(packet) }
        }
        return out + tail
    }
}

/// Unbuffered writes to standard error.
enum FileHandleStandardError {
    static func write(_ text: String) {
        var bytes = Array(text.utf8)
        _ = Glibc.write(2, &bytes, bytes.count)
    }
}
