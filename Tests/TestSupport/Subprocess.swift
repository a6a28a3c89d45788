import Glibc

/// Runs a program to completion, for tests that need an outside tool (espeak-ng, opusenc). No
/// shell: arguments reach the program exactly as given.
public enum Subprocess {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Starts `argv[0]` (looked up in PATH) with the test process's standard streams, waits for it
    /// and returns its exit status, or 128 + the signal number if a signal ended it. The child gets
    /// descriptors 0 to 2 only: test sockets are opened without O_CLOEXEC, and a child holding
    /// one would hide a hang-up from the server under test.
    /// `quiet`: the program's output goes to /dev/null.
    public static func run(_ argv: [String], quiet: Bool = false) throws -> Int32 {
        try run(argv, stdin: nil, stdout: quiet ? "/dev/null" : nil, stderr: quiet ? "/dev/null" : nil)
    }

    /// What a program printed, and how it ended.
    public struct Captured {
        public let status: Int32
        public let stdout: String
        public let stderr: String
    }

    /// Runs `argv` with `input` on its standard input and captures both outputs (through files, so
    /// neither can fill a pipe and stall it).
    public static func capture(_ argv: [String], input: String = "") throws -> Captured {
        let base = "/tmp/parley-capture-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { for suffix in [".in", ".out", ".err"] { unlink(base + suffix) } }
        guard let file = fopen(base + ".in", "w") else { throw Failure(description: "cannot write \(base).in") }
        fputs(input, file)
        fclose(file)
        let status = try run(argv, stdin: base + ".in", stdout: base + ".out", stderr: base + ".err")
        func text(_ path: String) -> String {
            guard let f = fopen(path, "r") else { return "" }
            defer { fclose(f) }
            var out: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = fread(&buffer, 1, buffer.count, f)
                if n <= 0 { break }
                out += buffer[..<n]
            }
            return String(decoding: out, as: UTF8.self)
        }
        return Captured(status: status, stdout: text(base + ".out"), stderr: text(base + ".err"))
    }

    /// Starts `argv` (looked up in PATH) and returns at once with its pid, for a server the test
    /// stops itself (`stop`). Descriptors 0 to 2 only, as for `run`; `quiet` sends its output to /dev/null.
    /// `output`: a file that gets both its outputs instead.
    public static func start(_ argv: [String], quiet: Bool = false, output: String? = nil) throws -> pid_t {
        let file = output ?? (quiet ? "/dev/null" : nil)
        return try spawn(argv, stdin: nil, stdout: file, stderr: file)
    }

    /// Starts `argv` with its standard output (and error, when `mergeErrors`) into a pipe, and
    /// nothing but stdio inherited; returns the child and the pipe's read end, which the caller closes.
    public static func startPiped(_ argv: [String], mergeErrors: Bool = false) throws -> (pid: pid_t, output: Int32) {
        let started = try spawnPiped(argv, mergeErrors: mergeErrors, input: false)
        return (started.pid, started.output)
    }

    /// Starts `argv` with its standard input on a socket too, for a tool a test asks one thing at a
    /// time (a request sent, its answer read); the caller closes both ends, and stops the child.
    /// A socket, not a pipe: sent with MSG_NOSIGNAL, a request to a child that has died fails with
    /// EPIPE, where a pipe's write would end the test process with SIGPIPE.
    public static func startConversing(_ argv: [String]) throws -> (pid: pid_t, input: Int32, output: Int32) {
        let started = try spawnPiped(argv, mergeErrors: false, input: true)
        return (started.pid, started.input, started.output)
    }

    private static func spawnPiped(_ argv: [String], mergeErrors: Bool, input: Bool) throws -> (pid: pid_t, input: Int32, output: Int32) {
        guard let program = argv.first else { throw Failure(description: "Subprocess: empty argv") }
        var fds: [Int32] = [0, 0]
        var inputs: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw Failure(description: "pipe failed") }
        guard !input || socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &inputs) == 0 else {
            close(fds[0]); close(fds[1])
            throw Failure(description: "socketpair failed")
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawn_file_actions_adddup2(&actions, fds[1], 1)
        if mergeErrors { posix_spawn_file_actions_adddup2(&actions, fds[1], 2) }
        posix_spawn_file_actions_addclose(&actions, fds[0])
        if input {
            posix_spawn_file_actions_adddup2(&actions, inputs[0], 0)
            posix_spawn_file_actions_addclose(&actions, inputs[1])
        }
        // Only stdio: test sockets are opened without O_CLOEXEC, and the other tests running in
        // parallel hold many. Inherited, they would hide hang-ups, and under `ulimit -n 32` they
        // would take a server's few descriptors before it could open its own.
        closeFrom(3, &actions)
        var child: pid_t = 0
        let cArgs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        defer { cArgs.forEach { free($0) } }
        let rc = posix_spawn(&child, program, &actions, nil, cArgs, environ)
        posix_spawn_file_actions_destroy(&actions)
        close(fds[1])
        if input { close(inputs[0]) }
        guard rc == 0 else {
            close(fds[0])
            if input { close(inputs[1]) }
            throw Failure(description: "posix_spawn \(program): \(rc)")
        }
        return (child, inputs[1], fds[0])
    }

    /// Sends `signal` to a child `start` made and waits for it to end, so that what it held (its
    /// listening port) is released when this returns.
    public static func stop(_ pid: pid_t, signal: Int32 = SIGKILL) {
        kill(pid, signal)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    }

    private static func run(_ argv: [String], stdin: String?, stdout: String?, stderr: String?) throws -> Int32 {
        let pid = try spawn(argv, stdin: stdin, stdout: stdout, stderr: stderr)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw Failure(description: "waitpid for \(argv[0]): \(String(cString: strerror(errno)))") }
        }
        // WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift does not import.
        return status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
    }

    private static func spawn(_ argv: [String], stdin: String?, stdout: String?, stderr: String?) throws -> pid_t {
        guard let program = argv.first else { throw Failure(description: "Subprocess: empty argv") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let stdin { posix_spawn_file_actions_addopen(&actions, 0, stdin, O_RDONLY, 0) }
        if let stdout { posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY | O_CREAT | O_TRUNC, 0o600) }
        if let stderr, stderr == stdout, stderr != "/dev/null" {
            posix_spawn_file_actions_adddup2(&actions, 1, 2)  // one file, one offset: neither overwrites the other
        } else if let stderr {
            posix_spawn_file_actions_addopen(&actions, 2, stderr, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        }
        closeFrom(3, &actions)
        let arguments: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        defer { arguments.forEach { free($0) } }
        var pid: pid_t = 0
        let rc = posix_spawnp(&pid, program, &actions, nil, arguments, environ)
        guard rc == 0 else {
            throw Failure(description: "cannot start \(program): \(String(cString: strerror(rc)))")
        }
        return pid
    }

    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32

    /// posix_spawn_file_actions_addclosefrom_np (glibc 2.34), looked up at run time because Swift's
    /// Glibc module is built without _GNU_SOURCE and does not declare it. On an older glibc the
    /// child inherits the descriptors.
    public static func closeFrom(_ fd: Int32, _ actions: inout posix_spawn_file_actions_t) {
        guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else { return }
        _ = unsafeBitCast(symbol, to: AddCloseFrom.self)(&actions, fd)
    }
}
