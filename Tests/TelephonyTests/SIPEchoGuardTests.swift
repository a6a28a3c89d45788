import Codec
import Glibc
import Loop
import Testing
import TestSupport

/// A phone call's own echo over SIP (issue 52, item 4): a real `parley serve` answering a call
/// over UDP with its greeting, on a clock the test moves (`--test-clock`), and a phone with no echo
/// canceller that loops a share of what it hears back into its microphone: the greeting's RTP,
/// decoded as it arrives and played out 20 ms a tick, returns `delayMs` later at `leakDB` (-10 to
/// -30 dB, where phones and hybrids return it; ITU-T G.168 asks a line's echo loss of at least
/// 6 dB, and handsets give 20 to 40) over a room's pink noise. The greeting must play to its end
/// with no pause and no barge-in; a caller who speaks over it (espeak-ng, two voices) must still
/// pause it. The phone is the test itself: the relay sits where the phone's loudspeaker meets its
/// microphone, so the server hears exactly the line a phone without a canceller sends.
@Suite(.serialized) struct SIPEchoGuardTests {
    static let story = "Once upon a time, a small boat left the harbour at dawn. The sea was calm and grey. "
        + "Nobody on board knew how far the wind would carry them."

    static let lines: [(leakDB: Double, delayMs: Int, utterance: String?, voice: String)] = [
        (-10, 300, nil, ""), (-20, 150, nil, ""), (-30, 600, nil, ""),
        (-10, 300, "wait, actually I meant Paris", "en-us"), (-20, 150, "wait, actually I meant Paris", "en-gb+f3"),
    ]

    @Test(arguments: Self.lines)
    func aCallersOwnEchoNeverInterruptsTheGreeting(leakDB: Double, delayMs: Int, utterance: String?, voice: String) throws {
        let sip = try RedisServer.freePort()
        let server = try ServerProcess(arguments: "--sip-port \(sip) --sip-host 127.0.0.1 --sip-allow 127.0.0.1/32 --sip-greeting '\(Self.story)'",
                                       clocked: true)
        let clock = try #require(server.clock)
        let phone = try TestPhone(sipPort: sip)
        try phone.call(clock)

        let noise = try WAVFile.read(path: try SpeechVectors.pinkNoise(seconds: 40, rate: 8_000, volume: 0.01)).samples
        var user: [Int16] = []
        if let utterance {
            let wav = try WAVFile.read(path: try SpeechVectors.wav(utterance, voice: voice))
            user = try Resampler(from: wav.sampleRate, to: 8_000).process(wav.samples)
        }
        let leak = pow(10, leakDB / 20), delay = 8 * delayMs
        var heard: [Int16] = []         // what the loudspeaker played, 20 ms a tick
        var spokenFrames = 0, firstSpoken: Int?, lastSpoken = 0, userStart: Int?
        var tick = 1
        while tick < 1_500 {
            let played = phone.nextFrame()
            heard += played
            if TestPhone.rms(played) > 300 {
                spokenFrames += 1
                if firstSpoken == nil { firstSpoken = tick }
                lastSpoken = tick
            }
            // A second into the greeting, the caller speaks.
            if utterance != nil, userStart == nil, let firstSpoken, tick - firstSpoken >= 50 { userStart = tick * 160 }
            try phone.send(EchoingMicrophone.frame(tick: tick, played: heard, leak: leak, delay: delay, user: user, userStart: userStart, noise: noise))
            #expect(clock.advance(milliseconds: 20), "the server did not settle at tick \(tick)")
            // Done: two seconds after the greeting's last sound, and after the caller's speech.
            if firstSpoken != nil, tick - lastSpoken > 100, userStart.map({ tick * 160 - $0 > user.count + 16_000 }) ?? (utterance == nil) { break }
            tick += 1
        }
        try phone.hangUp()

        let paused = server.metric("parley_replies_paused_total") ?? 0
        let cut = server.metric("parley_interruptions_total") ?? 0
        let label = "\(utterance.map { "\"\($0)\" (\(voice))" } ?? "echo only") at \(Int(leakDB)) dB, \(delayMs) ms"
        print("SIP \(label): \(spokenFrames * 20) ms of greeting heard, \(Int(paused)) paused, \(Int(cut)) cut")
        #expect(firstSpoken != nil, "\(label): the greeting never came")
        if utterance == nil {
            #expect(paused == 0 && cut == 0, "\(label): the greeting's own echo paused it \(Int(paused)) times, cut it \(Int(cut))")
            // The whole greeting played: about 0.3 s a word at Piper's pace, less its pauses.
            #expect(spokenFrames * 20 > Self.story.split(separator: " ").count * 200, "\(label): \(spokenFrames * 20) ms")
            #expect((server.metric("parley_echo_guard_frames_total{result=\"held\"}") ?? 0) > 0, "\(label): the guard never held a frame")
        } else {
            #expect(paused + cut >= 1, "\(label): the caller's speech did not pause the greeting")
        }
    }
}
