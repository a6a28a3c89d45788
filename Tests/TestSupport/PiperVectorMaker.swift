import Glibc
import JSON
import Synchronization

/// Piper's speech vectors made by one `scripts/tests/piper_vectors.py` a test process, which loads
/// the voice once: piper's command loaded it for every sentence (2.2 s of CPU each; a clean
/// clone's run made 86, 190 core-seconds). Requests go one at a time; a tool that failed to start or
/// died is started again at the next request.
enum PiperVectorMaker {
    private struct Tool {
        var pid: pid_t
        var input: Int32
        var output: Int32
    }

    private static let tool = Mutex<Tool?>(nil)

    /// Writes `sentence` in Piper's `voice` at `lengthScale` to `path` as a WAV, as piper's command
    /// with its noise off would.
    static func make(_ sentence: String, voice: String, lengthScale: Double, path: String) throws {
        try tool.withLock { tool in
            let running = try tool ?? start(voice)
            tool = running
            let request = #"{"text":\#(JSON.quoted(sentence)),"length_scale":\#(lengthScale),"path":\#(JSON.quoted(path))}"# + "\n"
            let answer = write(Array(request.utf8), to: running.input) ? readLine(running.output) : nil
            guard let answer, answer == "ok" else {
                // Dead or confused: ended, and started anew by the next request.
                close(running.input)
                close(running.output)
                Subprocess.stop(running.pid)
                tool = nil
                throw SpeechVectors.ToolFailure(description: "scripts/tests/piper_vectors.py: \(answer ?? "no answer (it exited)") for \"\(sentence)\"")
            }
        }
    }

    private static func start(_ voice: String) throws -> Tool {
        let started = try Subprocess.startConversing([".venv-speech/bin/python", "scripts/tests/piper_vectors.py", voice])
        return Tool(pid: started.pid, input: started.input, output: started.output)
    }

    /// To the tool's standard input, a socket (`Subprocess.startConversing`): false if it has gone.
    private static func write(_ bytes: [UInt8], to fd: Int32) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            sent += n
        }
        return true
    }

    /// One line, without its newline; nil at the end of the stream.
    private static func readLine(_ fd: Int32) -> String? {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let n = read(fd, &byte, 1)
            if n < 0 && errno == EINTR { continue }
            guard n == 1 else { return nil }
            if byte == UInt8(ascii: "\n") { return String(decoding: line, as: UTF8.self) }
            line.append(byte)
        }
    }
}
