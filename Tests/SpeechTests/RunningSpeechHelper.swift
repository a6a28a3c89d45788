import Speech
import TestSupport
import Loop
#if canImport(Glibc)
import Glibc
#endif

/// A real speech helper (helpers/parley_speech.py in the project venv) for the speech tests, started
/// as `parley serve` starts it and waited for until it says `ready`. `parley serve` also watches and
/// restarts it (SpeechHelperProcess, in the executable; ParleyTests kill it under a real server);
/// these tests need only one that runs.
final class RunningSpeechHelper: Sendable {
    let pid: pid_t
    let status: SpeechHelperStatus
    let directory: String
    private let input: Int32

    /// Nil when it ends before it says `ready` (its models missing: run scripts/tools/speech-models.sh).
    init?(_ modelArguments: [String], workers: Int = 2) {
        guard let directory = try? Sys.makeTemporaryDirectory(prefix: "parley-test-helper-") else { return nil }
        let socketPath = directory + "/helper.sock"
        // Its stdin a pipe this process holds open and never writes (`--exit-with-stdin`), as
        // `parley serve` does: when the test process ends, so does the helper.
        guard let input = try? Sys.pipe(), let output = try? Sys.pipe(),
              let pid = try? Sys.spawn(".venv-speech/bin/python", [".venv-speech/bin/python", "helpers/parley_speech.py", "--socket", socketPath,
                                                                     "--exit-with-stdin", "--workers", String(workers)] + modelArguments,
                                       standardInput: input.read, standardOutput: output.write) else { return nil }
        Sys.close(input.read)
        Sys.close(output.write)
        defer { Sys.close(output.read) }
        var line: [UInt8] = []
        var byte: UInt8 = 0
        var ready = false
        // A blocking pipe: read until the `ready` line, or until the helper ends (it could not load).
        while read(output.read, &byte, 1) == 1 {
            if byte == UInt8(ascii: "\n") {
                if line.starts(with: Array("ready".utf8)) { ready = true; break }
                line = []
            } else {
                line.append(byte)
            }
        }
        guard ready else {
            Subprocess.stop(pid)
            Sys.close(input.write)
            return nil
        }
        self.pid = pid
        self.directory = directory
        self.input = input.write
        status = SpeechHelperStatus(sharedAt: socketPath)
    }

    func stop() {
        Subprocess.stop(pid)
        Sys.close(input)
        Directory.removeFlat(directory)
    }
}
