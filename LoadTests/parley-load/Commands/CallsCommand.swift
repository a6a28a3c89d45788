import ArgumentParser
import Codec
import JSON
import Loop
#if canImport(Glibc)
import Glibc
#endif

/// `parley-load calls`: phone calls on a Twilio Media Streams endpoint, every one streaming.
struct CallsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "calls",
        abstract: "Hold N phone calls on /twilio, every one streaming µ-law media every 20 ms as a carrier does, a share of them speech; measure how far the server runs behind real time.",
        discussion: """
            Each call opens as Twilio's do (connected, then start with a streamSid) and then sends one JSON \
            media message every 20 ms: 160 bytes of 8 kHz µ-law in base64, the recording given with --input \
            (resampled and G.711-encoded here) for the --talking share of the calls, silence for the rest. \
            So the server parses JSON and base64 and runs VAD on every frame of every call; the codec is a \
            table lookup. The server's lag is its parley_audio_input_lag_seconds over the measured window, \
            against the same 5 ms p99 budget as `voice`. One client process.
            """)

    @Argument(help: "Calls to open (one process: at most about 19,000).")
    var calls: Int

    @Option(help: "The share of calls speaking at any moment (the rest stream silence).")
    var talking = 0.2

    @Option(help: "The Media Streams endpoint; loopback addresses only.")
    var url = "ws://127.0.0.1:8080/twilio"

    @OptionGroup var stream: StreamOptions










    func validate() throws {
        guard (1...19_000).contains(calls) else { throw ValidationError("calls must be 1...19000 (one client process)") }
        guard (0...1).contains(talking) else { throw ValidationError("--talking is a share, 0...1") }
    }

    func run() throws {
        signal(SIGPIPE, SIG_IGN)
        let target = try LoadTarget(url, caFile: stream.ca)
        DescriptorLimit.raiseToHard()
        let speech = try PhoneSpeech(wav: stream.input, pause: stream.pause)
        let packets = speech.frames.map(Self.media)
        let speaking = Int((Double(calls) * talking).rounded())
        print("parley-load calls: \(Format.grouped(calls)) calls to \(target), \(Format.grouped(speaking)) talking \(stream.input) (\(Format.fixed(speech.speechSeconds, 1)) s and \(Format.fixed(stream.pause, 1)) s of silence, looped), the rest streaming silence; 50 media messages a second each")
        Console.flush()
        var settings = VoiceRun.Settings(target: target, sessions: calls, speaking: speaking, packets: packets, connectTimeout: stream.connectTimeout, sources: stream.sources)
        settings.calls = VoiceRun.Calls(opening: Self.opening, silence: Self.media(PhoneSpeech.silence))
        let summary = try stream.measurement(target)
            .run(settings, describe: { VoiceSummary.Run(kind: "calls", detail: "µ-law 8 kHz, JSON + base64 media every 20 ms on every call", sessions: calls, speakingAsked: speaking) })
        try stream.finish(summary)
    }

    /// A `media` message as Twilio sends it. The chunk and timestamp fields are the same in every
    /// copy (the server does not read them), so one encoding serves every call.
    static func media(_ chunk: [UInt8]) -> [UInt8] {
        Array(#"{"event":"media","sequenceNumber":"3","media":{"track":"inbound","chunk":"1","timestamp":"20","payload":"\#(Base64.encode(chunk))"},"streamSid":"MZload"}"#.utf8)
    }

    /// `connected` and `start`, as Twilio opens a stream.
    static func opening(_ slot: Int) -> [[UInt8]] {
        let sid = "MZ\(slot)"
        return [Array(#"{"event":"connected","protocol":"Call","version":"1.0.0"}"#.utf8),
                Array(#"{"event":"start","sequenceNumber":"1","start":{"accountSid":"ACload","streamSid":"\#(sid)","callSid":"CA\#(slot)","tracks":["inbound"],"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000,"channels":1},"customParameters":{}},"streamSid":"\#(sid)"}"#.utf8)]
    }
}
