#if canImport(Glibc)
import Glibc
#endif

/// Other programs `compare` runs: the servers under test, and this tool's own scenarios.
enum Subprocess {
    /// Starts `argv` (found in PATH) with its output going to the file `output`; nil if it cannot start.
    static func start(_ argv: [String], output: String) -> pid_t? {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        let arguments: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        defer { arguments.forEach { free($0) } }
        var pid: pid_t = 0
        return posix_spawnp(&pid, argv[0], &actions, nil, arguments, environ) == 0 ? pid : nil
    }

    /// Runs `argv` to its end; its output goes to the file `output` when given, and is shown after
    /// it ends when `echo`. Returns the exit status (128 + signal if a signal ended it, 127 if it
    /// could not start).
    @discardableResult
    static func run(_ argv: [String], output: String? = nil, echo: Bool = false) -> Int32 {
        let path = output ?? "/dev/null"
        guard let pid = start(argv, output: path) else { return 127 }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        if echo, output != nil, let text = try? TextFile.read(path) { print(text, terminator: text.hasSuffix("\n") ? "" : "\n") }
        return status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
    }
}

/// "20261122T143512Z", for report directory names.
enum UTCStamp {
    static func now() -> String {
        var seconds = time(nil)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : String(n) }
        return "\(parts.tm_year + 1900)\(two(parts.tm_mon + 1))\(two(parts.tm_mday))T\(two(parts.tm_hour))\(two(parts.tm_min))\(two(parts.tm_sec))Z"
    }
}
