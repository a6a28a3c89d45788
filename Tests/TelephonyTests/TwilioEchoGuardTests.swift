import Codec
import Glibc
import JSON
import Loop
import Models
import Server
import Session
import Speech
import Telephony
import Testing
import TestSupport

/// A speakerphone on /twilio: the caller's phone plays the greeting and its microphone hears it
/// 150 to 600 ms later at -10 to -30 dB over a room's noise, sent back as Twilio does (20 ms µ-law `media`, each
/// `mark` echoed once the audio before it has played), on the test's clock (`ClockedConversation`). The echo guard is always on for calls:
/// the greeting must play to its end with no `clear` (a pause); a caller who says "wait, actually
/// I meant Paris" over it (espeak-ng, two voices) must still pause it. (With the guard switched
/// off in TwilioCallHandler, the same echo sent 4 `clear`s and cut the greeting at 1.7 s.)
@Suite(.serialized) struct TwilioEchoGuardTests {
    static let story = "Once upon a time, a small boat left the harbour at dawn. The sea was calm and grey. "
        + "Nobody on board knew how far the wind would carry them."

    enum Played { case audio([Int16]), mark(String) }

    /// Echo levels and delays as phones return them (SIPEchoGuardTests has the same span over SIP).
    static let lines: [(utterance: String?, voice: String, leakDB: Double, delayMs: Int)] = [
        (nil, "en-us", -10, 150), (nil, "en-us", -20, 400), (nil, "en-us", -30, 600),
        ("wait, actually I meant Paris", "en-us", -10, 150), ("wait, actually I meant Paris", "en-gb+f3", -20, 400),
    ]

    @Test(arguments: Self.lines)
    func aSpeakerphoneHearingTheGreeting(utterance: String?, voice: String, leakDB: Double, delayMs: Int) throws {
        let leak = pow(10, leakDB / 20), delay = 8 * delayMs
        let clock = ManualClock()
        let (server, client, pool) = try TwilioPauseTests.greetedCall(greeting: Self.story, clock: clock)
        defer { pool.stop() }
        let call = try ClockedConversation(client: client, clock: clock)

        let noise = try WAVFile.read(path: try SpeechVectors.pinkNoise(seconds: 40, rate: 8_000, volume: 0.01)).samples
        var user: [Int16] = []
        if let utterance {
            let wav = try WAVFile.read(path: try SpeechVectors.wav(utterance, voice: voice))
            user = try Resampler(from: wav.sampleRate, to: 8_000).process(wav.samples)
        }
        var queue: [Played] = []   // what the phone has yet to play
        var speaker: [Int16] = []  // what it played, 20 ms a tick
        var payloads = 0, clears = 0, read = 0
        var firstMedia: Int?, lastMedia = 0, userStart: Int?
        var tick = 1
        while tick < 1_500 {
            // What the server sent by this tick.
            for message in call.events[read...] {
                switch message["event"]?.string {
                case "media":
                    if firstMedia == nil { firstMedia = tick }
                    lastMedia = tick
                    payloads += 1
                    let bytes = Base64.decode(Array((message["media"]?["payload"]?.string ?? "").utf8)) ?? []
                    queue.append(.audio(G711.decode(bytes, .muLaw)))
                case "mark": queue.append(.mark(message["mark"]?["name"]?.string ?? ""))
                case "clear":
                    // Twilio drops what it had yet to play and echoes the marks in it.
                    clears += 1
                    for case .mark(let name) in queue { try echo(name, call) }
                    queue = []
                default: break
                }
            }
            read = call.events.count
            // The loudspeaker plays the next 20 ms, and the marks after it are echoed.
            var played = [Int16](repeating: 0, count: 160)
            if case .audio(let samples) = queue.first {
                played = samples + [Int16](repeating: 0, count: max(0, 160 - samples.count))
                queue.removeFirst()
            }
            while case .mark(let name) = queue.first {
                try echo(name, call)
                queue.removeFirst()
            }
            speaker += played.prefix(160)
            // A second into the greeting, the caller speaks.
            if utterance != nil, userStart == nil, let firstMedia, tick - firstMedia >= 50 { userStart = tick * 160 }
            let mic = EchoingMicrophone.frame(tick: tick, played: speaker, leak: leak, delay: delay, user: user, userStart: userStart, noise: noise)
            try call.send(#"{"event":"media","streamSid":"MZ1","media":{"track":"inbound","payload":"\#(Base64.encode(G711.encode(mic, .muLaw)))"}}"#)
            try call.advance(milliseconds: 20)
            // Done: a second after the last media, with nothing left to play.
            if firstMedia != nil, queue.isEmpty, tick - lastMedia > 50, utterance == nil || userStart.map({ tick * 160 - $0 > user.count + 8_000 }) == true { break }
            tick += 1
        }
        let label = "\(utterance ?? "echo only") (\(voice)) at \(Int(leakDB)) dB, \(delayMs) ms"
        print("/twilio \(label): \(payloads) payloads (\(payloads * 20) ms), \(clears) clear")
        if utterance == nil {
            #expect(clears == 0, "the greeting's own echo paused it")
            // The whole greeting was sent: about 0.4 s a word at espeak-ng's pace.
            #expect(payloads * 20 > Self.story.split(separator: " ").count * 250, "\(payloads * 20) ms")
            #expect((server.metric("parley_echo_guard_frames_total{result=\"held\"}") ?? 0) > 0)
        } else {
            #expect(clears >= 1, "\(label): the caller's speech did not pause the greeting")
        }
    }

    private func echo(_ name: String, _ call: ClockedConversation) throws {
        try call.send(#"{"event":"mark","streamSid":"MZ1","mark":{"name":"\#(name)"}}"#)
    }
}
