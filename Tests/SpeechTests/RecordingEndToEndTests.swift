import Codec
import JSON
@testable import Models
import Server
@testable import Session
import Speech
import Testing
import TestSupport
import Loop
#if canImport(Glibc)
import Glibc
#endif

/// A recorded call over a real socket, on the test's clock (`ClockedConversation`), with real
/// speech (espeak-ng in two voices) heard by the server's VAD and pocketsphinx and a spoken reply: the file decodes with opusinfo and opusdec, is
/// stereo, starts when the session asked (what the caller said before is not in it), holds the
/// caller on the left where they spoke and the agent on the right where it was heard, cut where the
/// caller's barge-in cut it. A server that does not record refuses the setting and goes on.
@Suite(.serialized) struct RecordingEndToEndTests {
    static let story = InterruptionEndToEndTests.story

    /// Replies sent 1.5 s ahead of their playing (a client on a lossy network's lead): without
    /// the cut at the barge-in, the recording would hold that much of what was never heard.
    static let leadMs = 1_500

    /// 16 kHz samples: the rate a pcm16 session is heard (and so recorded) at.
    static let rate = 16_000

    func say(_ text: String, _ voice: String) throws -> [Int16] {
        let wav = try WAVFile.read(path: try SpeechVectors.wav(text, voice: voice))
        return try Resampler(from: wav.sampleRate, to: 24_000).process(wav.samples)
    }

    func update(_ client: TestClient, _ session: String) throws {
        try client.send(TestClient.frame(0x1, Array(#"{"type":"session.update","session":\#(session)}"#.utf8)))
    }

    /// Seconds from the recording's start of the first and last samples at or above -30 dBFS in
    /// `samples` (one channel), nil when none is.
    func loud(_ samples: [Int16]) -> (first: Double, last: Double)? {
        let threshold: Int16 = 1_000
        guard let first = samples.firstIndex(where: { abs(Int($0)) >= Int(threshold) }),
              let last = samples.lastIndex(where: { abs(Int($0)) >= Int(threshold) }) else { return nil }
        return (Double(first) / Double(Self.rate), Double(last) / Double(Self.rate))
    }

    @Test(arguments: [("en-us", "en-gb+f3"), ("en-gb+f3", "en-us")])
    func aRecordedCallHoldsBothSidesWhereTheyWereHeard(asker: String, interrupter: String) throws {
        let directory = try Sys.makeTemporaryDirectory(prefix: "parley-recordings-")
        defer { Directory.removeFlat(directory) }
        let recordings = try Recordings(directory: directory, retentionDays: 1)
        let clock = ManualClock()
        let (server, pool) = try InterruptionEndToEndTests.storyServer(silero: false, recordings: recordings, replyLeadMs: Self.leadMs, clock: clock)
        defer { pool.stop() }
        let talk = try ClockedConversation(server: server, clock: clock, path: "/v1/realtime")
        let created = try talk.advance(until: "session.created", withinMs: 1_000)
        let sessionID = try #require(created["session"]?["id"]?.string)
        // Before the ask: speech with no turn detection, which must not reach the recording.
        try talk.send(#"{"type":"session.update","session":{"type":"realtime","output_modalities":["audio"],"audio":{"input":{"turn_detection":null}}}}"#)
        try talk.advance(until: "session.updated", withinMs: 1_000)
        try talk.stream(try say("This was said before anyone asked to record.", asker))
        try talk.send(#"{"type":"input_audio_buffer.clear"}"#)
        try talk.advance(until: "input_audio_buffer.cleared", withinMs: 1_000)

        // The client asks for each reply, so that the barge-in cuts the reply and starts none.
        var mark = talk.events.count
        try talk.send(#"{"type":"session.update","session":{"recording":true,"audio":{"input":{"turn_detection":{"type":"server_vad","create_response":false}}}}}"#)
        let asked = talk.elapsedMs
        let updated = try talk.advance(until: "session.updated", after: mark, withinMs: 1_000)
        #expect(updated["session"]?["recording"]?.bool == true)
        mark = talk.events.count
        let question = try say("Tell me a story about the sea.", asker)
        try talk.stream([Int16](repeating: 0, count: 12_000) + question + [Int16](repeating: 0, count: 12_000))
        _ = try #require(talk.first("input_audio_buffer.committed", after: mark), "the question's turn never ended")
        try talk.send(#"{"type":"response.create"}"#)
        // The reply's first audio, then one second of it, then the caller talks over it.
        try talk.advance(until: "response.output_audio.delta", after: mark, withinMs: 10_000)
        let firstAudio = talk.eventTimes[try #require(talk.first("response.output_audio.delta", after: mark))]
        try talk.advance(milliseconds: firstAudio + 1_000 - talk.elapsedMs)
        try talk.stream(try say("wait, actually I meant Paris", interrupter) + [Int16](repeating: 0, count: 12_000))
        let doneIndex = try #require(talk.first("response.done", after: mark), "the reply never ended: \(talk.types.suffix(20))")
        let cut = talk.eventTimes[doneIndex]
        #expect(talk.events[doneIndex]["response"]?["status"]?.string == "cancelled", "the reply was not cut: \(talk.types)")
        // A second and a half of quiet: as long as the reply was sent ahead, so that what the cut
        // took would show.
        try talk.stream([Int16](repeating: 0, count: 36_000))
        let ended = talk.elapsedMs
        talk.client.hangUp()
        // pcm16 at 24 kHz: 48 bytes a millisecond. The first reply's audio: what came before the cut.
        let isDelta = { (i: Int) in talk.events[i]["type"]?.string == "response.output_audio.delta" }
        let sentMs = talk.events.indices.filter { $0 > mark && $0 < doneIndex && isDelta($0) }
            .reduce(0) { $0 + (talk.events[$1]["delta"]?.string?.utf8.count ?? 0) * 3 / 4 / 48 }
        #expect(!talk.events.indices.contains { $0 > doneIndex && isDelta($0) }, "audio after the cut")

        // The file is closed on the recording thread once the session has gone.
        let path = "\(directory)/\(sessionID).opus"
        var info = try Subprocess.capture(["opusinfo", path])
        for _ in 0..<50 where info.status != 0 || !info.stdout.contains("Total data length") {
            usleep(100_000)
            info = try Subprocess.capture(["opusinfo", path])
        }
        #expect(info.status == 0, "opusinfo: \(info.stdout)")
        #expect(info.stdout.contains("Channels: 2"), "\(info.stdout)")
        #expect(!info.stdout.contains("WARNING"), "opusinfo finds fault: \(info.stdout)")
        let wavPath = "\(directory)/decoded.wav"
        #expect(try Subprocess.run(["opusdec", "--quiet", "--rate", "\(Self.rate)", path, wavPath]) == 0)
        let wav = try WAVFile.read(path: wavPath)
        #expect(wav.channels == 2 && wav.sampleRate == Self.rate)
        let left = stride(from: 0, to: wav.samples.count, by: 2).map { wav.samples[$0] }
        let right = stride(from: 1, to: wav.samples.count, by: 2).map { wav.samples[$0] }
        let seconds = { (ms: Int) in Double(ms - asked) / 1000 }

        // As long as the session was recorded, both channels.
        #expect(abs(wav.duration - seconds(ended)) < 0.5, "recorded \(wav.duration) s of \(seconds(ended)) s")
        // The caller: nothing before the ask; the question from 0.5 s, for as long as it is.
        let caller = try #require(loud(left), "the caller's channel is silent")
        #expect(abs(caller.first - 0.5) < 0.25, "the caller is first heard at \(caller.first) s, not 0.5 s: audio from before the ask?")
        #expect(caller.last > seconds(cut) - 3, "the caller's barge-in is missing (last heard at \(caller.last) s)")
        // The agent: from when its first audio came to where the barge-in cut it, then silent: what
        // it had sent ahead (up to the 1.5 s lead) and no one heard is not in the recording.
        let index = { (time: Double) in min(right.count, max(0, Int(time * Double(Self.rate)))) }
        let reply = try #require(loud(Array(right[..<index(seconds(cut) + 0.3)])), "the agent's channel is silent")
        #expect(abs(reply.first - seconds(firstAudio)) < 0.5, "the agent is first heard at \(reply.first) s, its audio came at \(seconds(firstAudio)) s")
        #expect(reply.last > seconds(firstAudio) + 0.8, "the agent's channel ends at \(reply.last) s, before the second it played")
        // Heard means speech: a 20 ms frame at -30 dBFS RMS. One CI run (2026-11-25) found a single
        // 1 ms click at -30 dBFS 320 ms after the cut, in no frame's RMS; its cause is not known.
        let afterCut = Array(right[index(seconds(cut) + 0.3)...])
        let spokenFrames = stride(from: 0, to: afterCut.count, by: Self.rate / 50).filter { start in
            PCM.dBFS(afterCut[start..<min(afterCut.count, start + Self.rate / 50)]) >= -30
        }
        #expect(spokenFrames.isEmpty, "the agent is heard after the cut at \(seconds(cut)) s, in \(spokenFrames.count) frame(s) from \(Double(spokenFrames.first ?? 0) / Double(Self.rate)) s after it and 0.3 s")
        let heardMs = stride(from: 0, to: index(seconds(cut)), by: Self.rate / 50).count { start in
            right[start..<min(right.count, start + Self.rate / 50)].contains { abs(Int($0)) > 300 }
        } * 20
        // What was sent ahead plays out while the reply is only paused, so all of it may be heard;
        // never more.
        #expect(heardMs <= sentMs + 100, "the agent's channel holds \(heardMs) ms, more than the \(sentMs) ms it sent")
    }

    @Test func aServerThatDoesNotRecordRefusesAndGoesOn() throws {
        let (server, pool) = try InterruptionEndToEndTests.storyServer(silero: false)
        defer { pool.stop() }
        let client = try server.client()
        #expect(try client.upgrade(path: "/v1/realtime").status == 101)
        _ = try client.readEvents(until: "session.created")
        try update(client, #"{"type":"realtime","recording":true}"#)
        let refused = try client.readEvents(until: "error").events.last
        #expect(refused?["error"]?["code"]?.string == "recording_not_allowed", "\(String(describing: refused))")
        #expect(refused?["error"]?["message"]?.string?.contains("--recordings") == true)
        try update(client, #"{"type":"realtime","instructions":"Be brief."}"#)
        let updated = try client.readEvents(until: "session.updated").events.last
        #expect(updated?["session"]?["instructions"]?.string == "Be brief.")
        #expect(updated?["session"]?["recording"] == nil, "a session that never recorded reports no recording")
    }
}
