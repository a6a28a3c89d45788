import Glibc
import JSON
import Loop
import Models
import Speech
import Testing
import TestSupport
import SpeechContracts

/// One speech helper per box: `parley serve --workers 2` runs one helper, whose socket both
/// workers' loops use, and a helper of another protocol version is one start-up line naming both.
@Suite(.serialized) struct SpeechHelperPerBoxTests {
    let turns = TurnTakingEndToEndTests()

    /// The processes below `pid`, each with its command line.
    static func descendants(of pid: pid_t) -> [(pid: pid_t, command: String)] {
        var found: [(pid_t, String)] = []
        var queue = [pid]
        while let parent = queue.popLast() {
            let children = (try? Subprocess.capture(["pgrep", "-P", String(parent)]).stdout) ?? ""
            for child in children.split(separator: "\n").compactMap({ pid_t($0) }) {
                let command = Sys.readFile("/proc/\(child)/cmdline").map { String(decoding: $0.map { $0 == 0 ? 32 : $0 }, as: UTF8.self) } ?? ""
                found.append((child, command))
                queue.append(child)
            }
        }
        return found
    }

    /// The helper's counters and the pids at the other end of its connections (`stats`).
    static func stats(_ socketPath: String) throws -> JSON {
        let fd = try Sys.streamSocket(family: AF_UNIX, .blocking)
        defer { Sys.close(fd) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        _ = try Sys.connect(fd, to: try #require(SocketAddress.unix(path: socketPath)))
        let bytes = SpeechHelperFrame(.hello, id: 0, [("version", .int(SpeechHelperContract.version))]).encoded() + SpeechHelperFrame(.stats, id: 1).encoded()
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        var reader = SpeechHelperFrame.Reader()
        var buffer = [UInt8](repeating: 0, count: 65536)
        var frames: [JSON] = []
        while !frames.contains(where: { $0["id"]?.int == 1 }) {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { break }
            frames += try buffer[..<n].withUnsafeBytes { try reader.read($0) }.map(\.header)
        }
        return try #require(frames.last { $0["id"]?.int == 1 }, "no stats from the helper: \(frames)")
    }

    @Test func twoWorkersShareOneHelper() throws {
        let server = try ServerProcess(arguments: "--workers 2 --loops 1 --synthesizer none --turn-model none")
        let tree = Self.descendants(of: server.pid)
        let helpers = tree.filter { $0.command.contains("parley_speech.py") }
        let workers = Set(tree.filter { $0.command.contains("--worker-name") }.map(\.pid))
        #expect(helpers.count == 1, "helpers: \(helpers)")
        #expect(workers.count == 2, "workers: \(tree)")
        let helper = try #require(helpers.first)
        let arguments = helper.command.split(separator: " ").map(String.init)
        let socketPath = try #require(arguments.firstIndex(of: "--socket").map { arguments[$0 + 1] })
        // SO_REUSEPORT spreads sessions over the workers by their ports: a few sessions reach both.
        var peers: Set<pid_t> = []
        var heard: [String] = []
        let speech = try TurnTakingEndToEndTests.Voice.piper(lengthScale: 1.0).say("Good morning, how are you?")
        for _ in 0..<12 where !workers.isSubset(of: peers) {
            heard.append(try transcribe(speech, on: server))
            let stats = try Self.stats(socketPath)
            peers.formUnion((stats["peers"]?.array ?? []).compactMap { $0.int.map(pid_t.init) })
        }
        #expect(workers.isSubset(of: peers), "the helper's peers \(peers), the workers \(workers)")
        #expect(heard.allSatisfy { $0.lowercased().contains("morning") }, "\(heard)")
        #expect(Self.descendants(of: server.pid).filter { $0.command.contains("parley_speech") }.count == 1)
    }

    /// One session's turn, transcribed: what it heard ("" if the transcription failed).
    func transcribe(_ speech: [Int16], on server: ServerProcess) throws -> String {
        let client = try TestClient(port: server.port, timeoutSeconds: 30)
        #expect(try client.upgrade(path: "/v1/realtime").status == 101)
        _ = try client.readEvents(until: "session.created")
        let update = #"{"type":"session.update","session":{"type":"realtime","output_modalities":["text"],"audio":{"input":{"format":{"type":"audio/pcm","rate":24000},"turn_detection":{"type":"server_vad","create_response":false}}}}}"#
        try client.send(TestClient.frame(0x1, Array(update.utf8)))
        _ = try client.readEvents(until: "session.updated")
        _ = try turns.stream(TurnTakingEndToEndTests.silence(ms: 300) + speech + TurnTakingEndToEndTests.silence(ms: 800), to: client)
        while true {
            let event = try client.readEvent()
            switch event["type"]?.string {
            case "conversation.item.input_audio_transcription.completed": return event["transcript"]?.string ?? ""
            case "conversation.item.input_audio_transcription.failed": return ""
            default: continue
            }
        }
    }

    /// The box's helper is killed: the supervisor starts it again, and the workers' loops, whose
    /// connections ended, connect to the new one with their next turn.
    @Test func aHelperThatDiesIsRestartedByTheSupervisorAndTheWorkersReconnect() throws {
        let server = try ServerProcess(arguments: "--workers 2 --loops 1 --synthesizer none --turn-model none")
        let speech = try TurnTakingEndToEndTests.Voice.piper(lengthScale: 1.0).say("Good morning, how are you?")
        #expect(try transcribe(speech, on: server).lowercased().contains("morning"))
        let helper = try #require(Self.descendants(of: server.pid).first { $0.command.contains("parley_speech.py") })
        kill(helper.pid, SIGKILL)
        for _ in 0..<50 where server.metric("parley_speech_helper_up") != 0 { usleep(100_000) }
        // Back within its first restart (1 s) and its model's load.
        for _ in 0..<150 where server.metric("parley_speech_helper_up") != 1 { usleep(100_000) }
        #expect(server.metric("parley_speech_helper_up") == 1, "the helper was not started again")
        #expect(server.metric("parley_speech_helper_restarts_total") == 1)
        let again = Self.descendants(of: server.pid).filter { $0.command.contains("parley_speech.py") }
        #expect(again.count == 1 && again.first?.pid != helper.pid, "\(again)")
        // Sessions on either worker: each turn heard by the new helper.
        for _ in 0..<4 { #expect(try transcribe(speech, on: server).lowercased().contains("morning")) }
    }

    /// A helper that answers `hello` with protocol version 1 (a stand-in with no models: it only
    /// says ready and answers hello) is one start-up line naming both versions; the server serves.
    @Test func aHelperOfAnotherProtocolVersionIsOneLineAtStart() throws {
        let path = "/tmp/parley-old-helper-\(getpid()).py"
        try Sys.writeFile(path, Array("""
            import json, socket, struct, sys
            path = sys.argv[sys.argv.index("--socket") + 1]
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(path)
            listener.listen(8)
            print("ready {}", flush=True)
            while True:
                connection, _ = listener.accept()
                lengths = connection.recv(8)
                header, payload = struct.unpack("<II", lengths)
                connection.recv(header + payload)
                body = json.dumps({"op": "hello", "id": 0, "models": {}}).encode()
                connection.sendall(struct.pack("<II", len(body), 0) + body)
                connection.close()
            """.utf8), mode: 0o644)
        defer { unlink(path) }
        let server = try ServerProcess(arguments: "--speech-helper \(path) --synthesizer none --turn-model none")
        let said = server.startupLines.filter { $0.contains("protocol version") }
        #expect(said.count == 1 && said.first?.contains("speaks protocol version 1, this parley speaks 2") == true, "\(server.startupLines)")
        #expect(server.metric("parley_speech_helper_up") == 0)
    }
}
