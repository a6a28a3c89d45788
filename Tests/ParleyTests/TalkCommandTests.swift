import Codec
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `parley talk` against a real `parley serve` (the defaults: pocketsphinx, the built-in agent,
/// espeak-ng), both as child processes.
@Suite(.serialized) struct TalkCommandTests {
    func talk(_ server: ServerProcess?, _ arguments: [String], input: String = "") throws -> Subprocess.Captured {
        let url = server.map { "ws://127.0.0.1:\($0.port)" } ?? "ws://127.0.0.1:9"
        return try Subprocess.capture([ServerProcess.parleyPath, "talk", url] + arguments, input: input)
    }

    @Test func aTextTurnPrintsTheStreamingReply() throws {
        let server = try ServerProcess()
        let result = try talk(server, ["--text", "What is twelve times seven?"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stdout.contains("parley: ") && result.stdout.contains("84"), "stdout: \(result.stdout)")
    }

    @Test func aSpokenTurnPrintsTheWordsHeard() throws {
        let server = try ServerProcess()
        let result = try talk(server, ["--audio", try SpeechVectors.wav("What is the weather like in Paris")])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stdout.contains("you: ") && result.stdout.contains("weather"), "stdout: \(result.stdout)")
        #expect(result.stdout.contains("parley: "))
    }

    @Test func theSpokenReplyIsSavedAsAWAVFile() throws {
        let server = try ServerProcess()
        let reply = "/tmp/parley-talk-reply-\(getpid()).wav"
        defer { unlink(reply) }
        let result = try talk(server, ["--text", "What is twelve times seven?", "--save-reply", reply])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        // "12 times 7 is 84.", spoken: about a second and a half.
        let wav = try WAVFile.read(path: reply)
        #expect(wav.sampleRate == 24_000 && wav.duration > 0.8 && wav.duration < 4, "\(wav.duration) s of reply")
        #expect(PCM.dBFS(wav.samples) > -40)
    }

    @Test func anOpusFileIsSpokenToo() throws {
        let server = try ServerProcess()
        let result = try talk(server, ["--audio", try SpeechVectors.opus("What is the weather like in Paris")])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stdout.contains("you: "))
    }

    @Test func jsonPrintsEveryEventAsALine() throws {
        let server = try ServerProcess()
        let result = try talk(server, ["--json", "--text", "hello"])
        #expect(result.status == 0)
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.allSatisfy { $0.hasPrefix("{\"type\":\"") }, "stdout: \(result.stdout)")
        #expect(lines.contains { $0.contains("\"response.done\"") })
    }

    @Test func thePromptTakesATurnPerLine() throws {
        let server = try ServerProcess()
        let result = try talk(server, [], input: "hello\nWhat is twelve times seven?\n")
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stdout.components(separatedBy: "parley: ") == 3, "stdout: \(result.stdout)")
    }

    @Test func failuresHaveExitCodesAndMessages() throws {
        let unreachable = try talk(nil, ["--text", "hi"])
        #expect(unreachable.status == 3 && unreachable.stderr.contains("cannot connect"), "\(unreachable.status): \(unreachable.stderr)")
        let server = try ServerProcess()
        let missing = try talk(server, ["--audio", "/nonexistent.wav"])
        #expect(missing.status == 6 && !missing.stderr.isEmpty)
        let usage = try talk(server, ["--text", "a", "--audio", "b.wav"])
        #expect(usage.status == 64 && usage.stderr.contains("not both"))
        let wss = try Subprocess.capture([ServerProcess.parleyPath, "talk", "wss://127.0.0.1:1"])
        #expect(wss.status == 64 && wss.stderr.contains("ws:// only"))
    }
}

private extension String {
    func components(separatedBy needle: String) -> Int {
        var count = 1
        var rest = Substring(self)
        while let range = rest.firstRange(of: needle) { count += 1; rest = rest[range.upperBound...] }
        return count
    }
}

@Suite struct TalkKeyTests {
    @Test func talkPresentsPARLEY_API_KEYAndSaysSoWhenItIsMissing() throws {
        let server = try ServerProcess(arguments: "--transcriber none --synthesizer none", environment: "PARLEY_API_KEY=sk-talk")
        let url = "ws://127.0.0.1:\(server.port)"
        let without = try Subprocess.capture(["/usr/bin/env", "-u", "PARLEY_API_KEY", ServerProcess.parleyPath, "talk", url, "--text", "hello"])
        #expect(without.status != 0 && without.stderr.contains("401") && without.stderr.contains("PARLEY_API_KEY"), "\(without.stderr)")
        let with = try Subprocess.capture(["/usr/bin/env", "PARLEY_API_KEY=sk-talk", ServerProcess.parleyPath, "talk", url, "--text", "What is twelve times seven?"])
        #expect(with.status == 0 && with.stdout.contains("84"), "\(with.stderr)")
    }
}
