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
import SpeechContracts

/// A caller's short sound over a spoken reply on /twilio: the reply pauses with a `clear`, then
/// goes on, sent again from the last mark the caller's side had echoed, so nothing unheard is lost.
@Suite(.serialized) struct TwilioPauseTests {
    static let story = "Once upon a time, a small boat left the harbour at dawn. The sea was calm and grey. "
        + "Nobody on board knew how far the wind would carry them."

    /// A /twilio call whose greeting is `greeting`, spoken by espeak-ng, started (`start` sent) on
    /// a test server; the pool is the caller's to stop.
    static func greetedCall(greeting: String, clock: ManualClock? = nil) throws -> (TestServer, TestClient, WorkerPool) {
        let pool = try WorkerPool(name: "test-twilio-speech", threads: 2, queueLimit: 64)
        let speech = SpeechServices(transcriber: nil, synthesizer: EspeakSynthesizer(pool: pool), pool: pool)
        let server = try TestServer(clock: clock, routes: { routes in
            var settings = TwilioEndpoint.Settings()
            settings.greeting = greeting
            TwilioEndpoint(sessions: RealtimeEndpoint(model: BuiltinModel(), modelName: "test", speech: speech), settings: settings).install(on: &routes)
        })
        let client = try server.client()
        #expect(try client.upgrade(path: "/twilio").status == 101)
        try client.send(TestClient.frame(0x1, Array(#"{"event":"start","start":{"streamSid":"MZ1","callSid":"CA1","mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000,"channels":1}}}"#.utf8)))
        return (server, client, pool)
    }

    @Test func aShortSoundPausesTheReplyWithAClearAndTheResendStartsWhereTheCallerStopped() throws {
        let (server, client, pool) = try Self.greetedCall(greeting: Self.story)
        defer { pool.stop() }
        var timeout = timeval(tv_sec: 0, tv_usec: 10_000)
        setsockopt(client.fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))

        // What the phone received, in order: payloads, and after which payload each mark came.
        var payloads: [String] = []
        var marks: [(name: String, after: Int)] = []
        var echoed = 0          // marks echoed so far (the caller heard up to there)
        // At the clear: the payloads received, and where each mark echoed so far was (the
        // caller had heard up to the last; the server may not yet have read the last one or two,
        // which were on their way as it decided: a race of the wire, not of the rule).
        var clearAt: (payloads: Int, heardPayloads: Int, echoedAt: [Int])?
        var firstMedia: UInt64?
        let silence = Base64.encode([UInt8](repeating: 0xFF, count: 160))
        let tone = (0..<2_400).map { Int16(8000 * sin(Double($0) * 2 * .pi * 300 / 8000)) }   // 300 ms at 8 kHz
        let toneFrames = stride(from: 0, to: tone.count, by: 160).map { Base64.encode(G711.encode(Array(tone[$0..<($0 + 160)]), .muLaw)) }
        let begun = MonotonicClock.nanoseconds()
        var tick = 0
        while MonotonicClock.seconds(since: begun) < 7 {
            tick += 1
            // The caller: quiet, then 300 ms of sound 1.5 s into the reply, then quiet again.
            let intoReply = firstMedia.map { Int(MonotonicClock.seconds(since: $0) * 1000) } ?? -1
            let frame = intoReply >= 1500 && intoReply < 1500 + 20 * toneFrames.count ? toneFrames[min(toneFrames.count - 1, (intoReply - 1500) / 20)] : silence
            try client.send(TestClient.frame(0x1, Array(#"{"event":"media","streamSid":"MZ1","media":{"track":"inbound","payload":"\#(frame)"}}"#.utf8)))
            while let received = try? client.readFrame() {
                let message = try JSON(parsing: String(decoding: received.payload, as: UTF8.self))
                switch message["event"]?.string {
                case "media":
                    if firstMedia == nil { firstMedia = MonotonicClock.nanoseconds() }
                    payloads.append(message["media"]?["payload"]?.string ?? "")
                case "mark": marks.append((message["mark"]?["name"]?.string ?? "", payloads.count))
                case "clear":
                    #expect(clearAt == nil, "one clear")
                    clearAt = (payloads.count, echoed > 0 ? marks[echoed - 1].after : 0, [0] + marks[..<echoed].map(\.after))
                    marks.removeAll()
                    echoed = 0
                default: break
                }
            }
            // The phone plays in real time: a mark is echoed once the audio before it has played.
            if let firstMedia, clearAt == nil {
                let playedPayloads = Int(MonotonicClock.seconds(since: firstMedia) * 1000) / 20
                while echoed < marks.count, marks[echoed].after <= playedPayloads {
                    try client.send(TestClient.frame(0x1, Array(#"{"event":"mark","streamSid":"MZ1","mark":{"name":"\#(marks[echoed].name)"}}"#.utf8)))
                    echoed += 1
                }
            }
            usleep(20_000)
        }
        let clear = try #require(clearAt, "no clear in \(payloads.count) payloads")
        // The reply went on after the clear, from the first payload the caller had not heard.
        #expect(payloads.count > clear.payloads + 10, "\(payloads.count) payloads, clear after \(clear.payloads)")
        #expect(clear.heardPayloads < clear.payloads)
        if payloads.count > clear.payloads {
            // Resent from a payload the caller had heard up to: the last mark echoed, or one of
            // the two before it if the last were still in flight; never from past what was heard.
            let candidates = clear.echoedAt.suffix(3)
            #expect(candidates.contains { payloads[clear.payloads] == payloads[$0] },
                    "resent from none of payloads \(Array(candidates)) (the caller had heard to \(clear.heardPayloads))")
        }
        #expect((server.metric("parley_replies_resumed_total{reason=\"short\"}") ?? 0) >= 1)
    }
}
