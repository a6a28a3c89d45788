import Glibc
import Codec
import JSON
import Loop
import Testing
import TestSupport

/// `parley serve --recordings DIR`: a session that asks is recorded there, as `<id>.opus`, a file
/// opusinfo reads as stereo; a bad directory ends the start with one line; without the flag the
/// setting is refused (RecordingEndToEndTests has the recording's content).
@Suite struct RecordingOptionTests {
    @Test func aSessionThatAsksIsRecordedInTheDirectory() throws {
        let directory = try Sys.makeTemporaryDirectory(prefix: "parley-recordings-")
        defer { Directory.removeFlat(directory) }
        let server = try ServerProcess(arguments: "--transcriber none --synthesizer none --turn-model none --recordings \(directory) --recording-retention-days 2")
        let client = try TestClient(port: server.port)
        #expect(try client.upgrade(path: "/v1/realtime").status == 101)
        let id = try #require(try client.readEvents(until: "session.created").events.last?["session"]?["id"]?.string)
        try client.send(TestClient.frame(0x1, Array(#"{"type":"session.update","session":{"type":"realtime","recording":true}}"#.utf8)))
        #expect(try client.readEvents(until: "session.updated").events.last?["session"]?["recording"]?.bool == true)
        // A second of a 440 Hz tone, sent at once.
        let tone = (0..<24_000).map { Int16(8_000 * sin(2 * Double.pi * 440 * Double($0) / 24_000)) }
        try client.send(TestClient.frame(0x1, Array(#"{"type":"input_audio_buffer.append","audio":"\#(Base64.encode(PCM.littleEndianBytes(tone)))"}"#.utf8)))
        usleep(300_000)
        client.hangUp()
        let path = "\(directory)/\(id).opus"
        var info = try Subprocess.capture(["opusinfo", path])
        for _ in 0..<50 where info.status != 0 || !info.stdout.contains("Total data length") {
            usleep(100_000)
            info = try Subprocess.capture(["opusinfo", path])
        }
        #expect(info.status == 0 && info.stdout.contains("Channels: 2"), "\(info.stdout) \(info.stderr) \(Directory.names(in: directory))")
        #expect(!info.stdout.contains("WARNING"), "opusinfo finds fault: \(info.stdout)")
        #expect(server.metric("parley_recording_seconds_total").map { $0 >= 1 } == true)
        #expect(server.metric("parley_recordings_active") == 0)
    }

    @Test func aDirectoryThatCannotBeMadeEndsTheStart() throws {
        #expect(throws: ServerProcess.StartFailure.self) {
            _ = try ServerProcess(arguments: "--transcriber none --synthesizer none --turn-model none --recordings /proc/parley-cannot")
        }
    }
}
