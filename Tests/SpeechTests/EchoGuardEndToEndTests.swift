import Codec
import JSON
@testable import Models
import Server
import Session
import Speech
import Testing
import TestSupport
import Loop
#if canImport(Glibc)
import Glibc
#endif

/// Issue 24's echo: a listener without echo cancellation, whose loudspeaker plays the reply into
/// its own microphone 150 ms later at -10 dB, over a room's noise, streamed on the test's clock
/// (`ClockedConversation`: the loudspeaker plays what arrived as the clock moves). With the
/// echo guard on, the reply must not hear itself (no pause, no turn, the reply completes); with it
/// off the same leak must interrupt it (so the test means something); and with it on, the user
/// saying "stop" or "wait, actually I meant Paris" over the reply at normal level must still barge
/// in. With the energy detector and with Silero, on pcm16 at 24 kHz and on µ-law at 8 kHz (the
/// telephone's path, as /twilio's calls take it: G.711 in and out, 20 ms frames).
@Suite(.serialized) struct EchoGuardEndToEndTests {
    static let leak = 0.316 // -10 dB
    static let echoDelayMs = 150

    static let cases: [(guarded: Bool, utterance: String?, voice: String, silero: Bool, telephone: Bool)] = [
        (true, nil, "en-us", false, false), (false, nil, "en-us", false, false),
        (true, "stop", "en-us", false, false), (true, "wait, actually I meant Paris", "en-gb+f3", false, false),
        (true, nil, "en-us", true, false), (false, nil, "en-us", true, false),
        (true, "stop", "en-gb+f3", true, false), (true, "wait, actually I meant Paris", "en-us", true, false),
        (true, nil, "en-us", false, true), (false, nil, "en-us", false, true), (true, "stop", "en-gb+f3", false, true),
        // A backchannel over the guarded reply is still only that: the echo after it is not more of it.
        (true, "uh huh", "en-us", false, false), (true, "uh huh", "en-gb+f3", true, false), (true, "uh huh", "en-us", false, true),
    ]

    @Test(arguments: Self.cases)
    func aReplyLeakingIntoTheMicrophone(guarded: Bool, utterance: String?, voice: String, silero: Bool, telephone: Bool) throws {
        try Self.streamWithEcho(guarded: guarded, utterance: utterance, voice: voice, silero: silero, telephone: telephone, leak: Self.leak, echoDelayMs: Self.echoDelayMs)
    }

    /// A phone line's own echo (issue 52, item 4): a call has no echo cancellation at the far end,
    /// and a line returns the reply at -10 to -30 dB after its round trip. Guarded as every call
    /// is, on G.711 with Silero (the defaults), the reply never hears itself, whatever the level,
    /// and past the canceller's 300 ms tail too (the gate holds what the canceller cannot model).
    static let phoneLines: [(leakDB: Double, delayMs: Int, utterance: String?)] = [
        (-10, 300, nil), (-10, 500, nil), (-10, 700, nil), (-20, 150, nil), (-20, 700, nil), (-30, 500, nil),
        // The caller still barges in over the line's longest echo.
        (-10, 700, "stop"), (-20, 500, "wait, actually I meant Paris"),
    ]

    @Test(arguments: Self.phoneLines)
    func aPhoneLinesOwnEchoNeverInterruptsTheReply(leakDB: Double, delayMs: Int, utterance: String?) throws {
        try Self.streamWithEcho(guarded: true, utterance: utterance, voice: "en-gb+f3", silero: true, telephone: true,
                                leak: pow(10, leakDB / 20), echoDelayMs: delayMs)
    }

    static func streamWithEcho(guarded: Bool, utterance: String?, voice: String, silero: Bool, telephone: Bool, leak: Double, echoDelayMs: Int) throws {
        let clock = ManualClock()
        let (server, pool) = try InterruptionEndToEndTests.storyServer(silero: silero, clock: clock)
        defer { pool.stop() }
        let talk = try ClockedConversation(server: server, clock: clock, path: "/ws")
        let created = try talk.advance(until: "session.created", withinMs: 1_000)
        // The extension is not there until a client sets it: the SDKs' strict models never see it.
        #expect(!"\(created)".contains("echo_guard"))
        let rate = telephone ? 8_000 : 24_000
        let chunkMs = telephone ? 20 : 100 // 20 ms of µ-law as a phone bridge sends it; 100 ms of pcm16
        let chunk = rate * chunkMs / 1000
        let format = telephone ? #"{"type":"audio/pcmu"}"# : #"{"type":"audio/pcm","rate":24000}"#
        try talk.send(#"{"type":"session.update","session":{"type":"realtime","output_modalities":["audio"],"audio":{"input":{"format":\#(format),"echo_guard":\#(guarded)},"output":{"format":\#(format)}}}}"#)
        let updated = try talk.advance(until: "session.updated", withinMs: 1_000)["session"]
        #expect((updated?["audio"]?["input"]?["echo_guard"] ?? updated?["input_audio_echo_guard"])?.bool == guarded)
        let listening = talk.events.count

        let noise = try WAVFile.read(path: try SpeechVectors.pinkNoise(seconds: 40, rate: rate, volume: 0.01)).samples
        var user: [Int16] = []
        if let utterance {
            let wav = try WAVFile.read(path: try SpeechVectors.wav(utterance, voice: voice))
            user = try Resampler(from: wav.sampleRate, to: rate).process(wav.samples)
        }
        let delay = rate / 1000 * echoDelayMs
        // What arrived of the reply, what the loudspeaker has played of it, sample by sample from
        // the start (the microphone hears it late), and where the user began to speak.
        var arrived: [Int16] = [], played = 0, read = listening
        var speaker: [Int16] = []
        var firstAudioMs: Int?, doneAt: Int?, userStart: Int?
        var asked = false
        var tick = 1
        while tick < 40 * rate / chunk {
            for event in talk.events[read...] {
                let type = event["type"]?.string
                if type == "response.output_audio.delta", let bytes = Base64.decode(Array((event["delta"]?.string ?? "").utf8)) {
                    arrived += telephone ? G711.decode(bytes, .muLaw) : bytes.withUnsafeBytes { PCM.int16s(littleEndian: $0) }
                    if firstAudioMs == nil { firstAudioMs = talk.elapsedMs }
                }
                if type == "response.done", doneAt == nil { doneAt = tick }
            }
            read = talk.events.count
            // The loudspeaker plays the next piece of what arrived (silence if nothing has).
            let n = min(chunk, arrived.count - played)
            speaker += arrived[played..<(played + n)] + [Int16](repeating: 0, count: chunk - n)
            played += n
            // One second into the reply, the user speaks.
            if utterance != nil, userStart == nil, let firstAudioMs, talk.elapsedMs > firstAudioMs + 1_000 {
                userStart = tick * chunk
            }
            // The microphone's last `chunk` samples: the room, the echo, and the user if speaking.
            let mic = EchoingMicrophone.frame(tick: tick, samples: chunk, played: speaker, leak: leak, delay: delay, user: user, userStart: userStart, noise: noise)
            let bytes = telephone ? G711.encode(mic, .muLaw) : PCM.littleEndianBytes(mic)
            try talk.send(#"{"type":"input_audio_buffer.append","audio":"\#(Base64.encode(bytes))"}"#)
            // A second of the room first (the detector learns the quiet), then the question.
            if !asked, tick * chunk >= rate {
                asked = true
                try talk.send(#"{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_text","text":"Tell me a story about the sea."}]}}"#)
                try talk.send(#"{"type":"response.create"}"#)
            }
            try talk.advance(milliseconds: chunkMs)
            // Half a second more after the reply ends: its echo's tail.
            if let doneAt, (tick - doneAt) * chunk >= rate / 2 { break }
            tick += 1
        }
        let events = Array(talk.events[listening...])
        let types = events.map { $0["type"]?.string ?? "?" }
        let done = events.last { $0["type"]?.string == "response.done" }?["response"]
        let label = "\(guarded ? "guarded" : "unguarded") \(utterance ?? "echo only") (\(voice), \(silero ? "silero" : "energy"), \(telephone ? "µ-law 8 kHz" : "pcm16"), echo ×\(leak) \(echoDelayMs) ms)"
        let heldFrames = server.metric("parley_echo_guard_frames_total{result=\"held\"}") ?? 0
        print("\(label): \(done?["status"]?.string ?? "?"); paused \(types.filter { $0 == "parley.response.paused" }.count), speech_started \(types.filter { $0 == "input_audio_buffer.speech_started" }.count)")
        if utterance == "uh huh" {
            // Known: over a leaking reply pocketsphinx hears the backchannel with the echo the gate
            // lets through with it (the canceller has not converged a second into the reply) as
            // other words ("i", "but ah"), and a word that is not a backchannel is a barge-in.
            withKnownIssue("a backchannel over a leaking reply is heard with its echo as other words", isIntermittent: true) {
                #expect(done?["status"]?.string == "completed", "\(label): \(types)")
                #expect(!types.contains("input_audio_buffer.speech_started"), "\(label): \(types)")
            }
        } else if utterance != nil {
            // The user's own speech still barges in over the guarded reply.
            #expect(done?["status"]?.string == "cancelled", "\(label): \(types)")
            #expect(done?["status_details"]?["reason"]?.string == "turn_detected", "\(label)")
            #expect(types.contains("input_audio_buffer.speech_started"), "\(label)")
        } else if guarded {
            #expect(done?["status"]?.string == "completed", "\(label): \(types)")
            #expect(!types.contains("parley.response.paused"), "\(label): \(types)")
            #expect(!types.contains("input_audio_buffer.speech_started"), "\(label): \(types)")
            #expect(heldFrames > 0)
        } else {
            // The control: the same echo, unguarded, is heard as the user.
            #expect(types.contains("parley.response.paused") || types.contains("input_audio_buffer.speech_started"), "\(label): \(types)")
        }
    }
}
