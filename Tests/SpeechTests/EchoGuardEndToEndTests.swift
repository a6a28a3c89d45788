import Codec
import JSON
@testable import Models
import Server
import Session
import Speech
import Synchronization
import Testing
import TestSupport
import Loop
#if canImport(Glibc)
import Glibc
#endif

/// Issue 24's echo: a listener without echo cancellation, whose loudspeaker plays the reply into
/// its own microphone 150 ms later at -10 dB, over a room's noise, streamed in real time. With the
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

    /// What the listener has received: events, and the reply's audio not yet played.
    struct Heard: Sendable {
        var events: [JSON] = []
        var audio: [Int16] = []
        var played = 0
        var firstAudio: UInt64?
        var done = false
        var failure: String?
    }

    final class Reader: @unchecked Sendable {
        let client: TestClient
        let heard = Mutex(Heard())
        let law: G711.Law?
        init(_ client: TestClient, law: G711.Law?) {
            self.client = client
            self.law = law
        }

        /// Reads until the `session.updated` after `response.done`, decoding each audio delta into the playback queue.
        func run() {
            do {
                while true {
                    let frame = try client.readFrame()
                    guard frame.opcode == 0x1 else { continue }
                    let event = try JSON(parsing: String(decoding: frame.payload, as: UTF8.self))
                    var samples: [Int16] = []
                    if event["type"]?.string == "response.output_audio.delta" || event["type"]?.string == "response.audio.delta",
                       let bytes = Base64.decode(Array((event["delta"]?.string ?? "").utf8)) {
                        samples = law.map { G711.decode(bytes, $0) } ?? bytes.withUnsafeBytes { PCM.int16s(littleEndian: $0) }
                    }
                    let type = event["type"]?.string
                    // After the reply, the test's own session.update marks the end of what there is to read.
                    let finished = heard.withLock { $0.done } && type == "session.updated"
                    heard.withLock {
                        if !finished { $0.events.append(event) }
                        if !samples.isEmpty, $0.firstAudio == nil { $0.firstAudio = MonotonicClock.nanoseconds() }
                        $0.audio += samples
                        if type == "response.done" { $0.done = true }
                    }
                    if finished { return }
                }
            } catch {
                heard.withLock { $0.failure = "\(error)"; $0.done = true }
            }
        }
    }

    @Test(arguments: RealTimeScope.cases(Self.cases, short: [0, 1, 6, 10]))
    func aReplyLeakingIntoTheMicrophone(guarded: Bool, utterance: String?, voice: String, silero: Bool, telephone: Bool) throws {
        try RealTimeScope.retriedOnce("\(utterance ?? "echo only"), \(guarded ? "guarded" : "unguarded")") { try aReplyLeakingIntoTheMicrophoneOnce(guarded: guarded, utterance: utterance, voice: voice, silero: silero, telephone: telephone) }
    }

    func aReplyLeakingIntoTheMicrophoneOnce(guarded: Bool, utterance: String?, voice: String, silero: Bool, telephone: Bool) throws {
        let (server, pool) = try InterruptionEndToEndTests.storyServer(silero: silero)
        defer { pool.stop() }
        let client = try server.client()
        #expect(try client.upgrade(path: "/ws").status == 101)
        let created = try client.readEvents(until: "session.created").events.last
        // The extension is not there until a client sets it: the SDKs' strict models never see it.
        #expect(!"\(created ?? .null)".contains("echo_guard"))
        let rate = telephone ? 8_000 : 24_000
        let chunk = telephone ? 160 : 2_400 // 20 ms of µ-law as a phone bridge sends it; 100 ms of pcm16
        let format = telephone ? #"{"type":"audio/pcmu"}"# : #"{"type":"audio/pcm","rate":24000}"#
        let update = #"{"type":"session.update","session":{"type":"realtime","output_modalities":["audio"],"audio":{"input":{"format":\#(format),"echo_guard":\#(guarded)},"output":{"format":\#(format)}}}}"#
        try client.send(TestClient.frame(0x1, Array(update.utf8)))
        let updated = try client.readEvents(until: "session.updated").events.last?["session"]
        #expect((updated?["audio"]?["input"]?["echo_guard"] ?? updated?["input_audio_echo_guard"])?.bool == guarded)

        let reader = Reader(client, law: telephone ? .muLaw : nil)
        let thread = try Thread.spawn(name: "echo-reader") { reader.run() }

        let noise = try WAVFile.read(path: try SpeechVectors.pinkNoise(seconds: 40, rate: rate, volume: 0.01)).samples
        var user: [Int16] = []
        if let utterance {
            let wav = try WAVFile.read(path: try SpeechVectors.wav(utterance, voice: voice))
            user = try Resampler(from: wav.sampleRate, to: rate).process(wav.samples)
        }
        let delay = rate / 1000 * Self.echoDelayMs
        // What the loudspeaker played, sample by sample from the start: the microphone hears it late.
        var speaker: [Int16] = []
        var userStart: Int?
        let chunkNanoseconds = UInt64(chunk) * 1_000_000_000 / UInt64(rate)
        let start = MonotonicClock.nanoseconds()
        var asked = false
        var tick = 1
        var doneAt: Int?
        while tick < 40 * rate / chunk {
            let due = start + UInt64(tick) * chunkNanoseconds
            let now = MonotonicClock.nanoseconds()
            if due > now { usleep(UInt32((due - now) / 1_000)) }
            // The loudspeaker plays the next piece of what arrived (silence if nothing has).
            let (piece, firstAudio, done) = reader.heard.withLock { heard -> ([Int16], UInt64?, Bool) in
                let n = min(chunk, heard.audio.count - heard.played)
                let piece = Array(heard.audio[heard.played..<(heard.played + n)])
                heard.played += n
                return (piece, heard.firstAudio, heard.done)
            }
            speaker += piece + [Int16](repeating: 0, count: chunk - piece.count)
            // One second into the reply, the user speaks.
            if utterance != nil, userStart == nil, let firstAudio, MonotonicClock.nanoseconds() > firstAudio + 1_000_000_000 {
                userStart = tick * chunk
            }
            // The microphone's last `chunk` samples: the room, the echo, and the user if speaking.
            let from = (tick - 1) * chunk
            var mic = [Int16](repeating: 0, count: chunk)
            for i in 0..<chunk {
                let t = from + i
                let echo = t - delay >= 0 && t - delay < speaker.count ? Double(speaker[t - delay]) * Self.leak : 0
                let said = userStart.map { t - $0 >= 0 && t - $0 < user.count ? Double(user[t - $0]) : 0 } ?? 0
                mic[i] = Int16(clamping: Int(echo + said + Double(noise[t % noise.count])))
            }
            let bytes = telephone ? G711.encode(mic, .muLaw) : PCM.littleEndianBytes(mic)
            try client.send(TestClient.frame(0x1, Array(#"{"type":"input_audio_buffer.append","audio":"\#(Base64.encode(bytes))"}"#.utf8)))
            // A second of the room first (the detector learns the quiet), then the question.
            if !asked, tick * chunk >= rate {
                asked = true
                try client.send(TestClient.frame(0x1, Array(#"{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_text","text":"Tell me a story about the sea."}]}}"#.utf8)))
                try client.send(TestClient.frame(0x1, Array(#"{"type":"response.create"}"#.utf8)))
            }
            if done, doneAt == nil { doneAt = tick }
            // Half a second more after the reply ends: its echo's tail.
            if let doneAt, (tick - doneAt) * chunk >= rate / 2 { break }
            tick += 1
        }
        try client.send(TestClient.frame(0x1, Array(#"{"type":"session.update","session":{}}"#.utf8)))
        Thread.join(thread)
        let heard = reader.heard.withLock { $0 }
        #expect(heard.failure == nil, "\(heard.failure ?? "")")
        let types = heard.events.map { $0["type"]?.string ?? "?" }
        let done = heard.events.last { $0["type"]?.string == "response.done" }?["response"]
        let label = "\(guarded ? "guarded" : "unguarded") \(utterance ?? "echo only") (\(voice), \(silero ? "silero" : "energy"), \(telephone ? "µ-law 8 kHz" : "pcm16"))"
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
