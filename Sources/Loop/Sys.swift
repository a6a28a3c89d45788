import CLinux
#if canImport(Glibc)
import Glibc
#endif

/// One thin wrapper per system call Parley makes on sockets, descriptors and epoll, as
/// swift-system does: each retries on EINTR where the call may be retried, and throws
/// `SystemError` on failure, so no other file reads a raw return code or calls these directly
/// (`scripts/tools/check-layers.sh` fails the build on an `epoll_`, `socket(`, `connect(` or
/// `getaddrinfo(` anywhere else).
public enum Sys {
    @inline(__always)
    static func retrying<T: BinaryInteger>(_ call: String, _ body: () -> T) throws(SystemError) -> T {
        while true {
            let result = body()
            if result >= 0 { return result }
            if errno == EINTR { continue }
            throw SystemError(call)
        }
    }

    /// Outcome of a non-blocking read or write.
    public enum IOResult: Equatable, Sendable {
        case transferred(Int)
        case wouldBlock
        case endOfFile
    }

    // MARK: Reading and writing

    /// read(2) on a non-blocking descriptor.
    public static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> IOResult {
        while true {
            let n = Glibc.read(fd, buffer.baseAddress, buffer.count)
            if n > 0 { return .transferred(n) }
            if n == 0 { return buffer.isEmpty ? .transferred(0) : .endOfFile }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK { return .wouldBlock }
            throw SystemError("read")
        }
    }

    /// recv(2) on a non-blocking socket: `read` without the file layer's work (`fdget_pos`,
    /// `vfs_read`), about 4 % of a loop's CPU on small echoed messages (docs/benchmarks.md,
    /// "Issue 26's targets").
    public static func receive(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> IOResult {
        while true {
            let n = recv(fd, buffer.baseAddress, buffer.count, 0)
            if n > 0 { return .transferred(n) }
            if n == 0 { return buffer.isEmpty ? .transferred(0) : .endOfFile }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK { return .wouldBlock }
            throw SystemError("recv")
        }
    }

    /// sendmsg(2) of `count` buffers on a non-blocking socket: `writev` without the file layer,
    /// as `receive` is `read`'s; MSG_NOSIGNAL, so a peer gone is an error, never SIGPIPE. One
    /// buffer (the usual case: a corked run is one arena) goes by send(2), which skips sendmsg's
    /// copying in of the message header and its iovec array.
    public static func send(_ fd: Int32, _ iov: UnsafePointer<iovec>, count: Int) throws(SystemError) -> IOResult {
        var message = msghdr()
        message.msg_iov = UnsafeMutablePointer(mutating: iov)
        message.msg_iovlen = count
        while true {
            let n = count == 1 ? Glibc.send(fd, iov.pointee.iov_base, iov.pointee.iov_len, Int32(MSG_NOSIGNAL))
                               : sendmsg(fd, &message, Int32(MSG_NOSIGNAL))
            if n >= 0 { return .transferred(n) }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK { return .wouldBlock }
            throw SystemError("sendmsg")
        }
    }

    /// `send` of one buffer.
    public static func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws(SystemError) -> IOResult {
        var iov = iovec(iov_base: UnsafeMutableRawPointer(mutating: bytes.baseAddress), iov_len: bytes.count)
        return try send(fd, &iov, count: 1)
    }

    /// writev(2) on a non-blocking descriptor.
    public static func writev(_ fd: Int32, _ iov: UnsafePointer<iovec>, count: Int) throws(SystemError) -> IOResult {
        while true {
            let n = Glibc.writev(fd, iov, Int32(count))
            if n >= 0 { return .transferred(n) }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK { return .wouldBlock }
            throw SystemError("writev")
        }
    }

    /// write(2) of one buffer: `writev` with one element.
    public static func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws(SystemError) -> IOResult {
        var iov = iovec(iov_base: UnsafeMutableRawPointer(mutating: bytes.baseAddress), iov_len: bytes.count)
        return try writev(fd, &iov, count: 1)
    }

    /// malloc_trim(3) with no padding: gives every arena's free pages back to the system. True
    /// when some memory was released.
    @discardableResult
    public static func trimHeap() -> Bool {
        malloc_trim(0) != 0
    }

    /// mallinfo2(3): bytes the process's heap has handed out and not had back (every arena's, and
    /// the blocks malloc maps on their own). Unlike the resident size, this does not hide what a
    /// new allocation takes from memory freed earlier, nor count freed memory not yet returned.
    public static func heapInUseBytes() -> Int {
        let info = mallinfo2()
        return Int(info.uordblks) + Int(info.hblkhd)
    }

    public static func close(_ fd: Int32) {
        // Linux releases the descriptor even when close(2) reports EINTR: never retry.
        _ = Glibc.close(fd)
    }

    /// open(2) read-only, close-on-exec.
    public static func openReadOnly(_ path: String) throws(SystemError) -> Int32 {
        try retrying("open(\(path))") { Glibc.open(path, O_RDONLY | O_CLOEXEC) }
    }

    /// gethostname(2): this machine's name (a pod's name on Kubernetes), "localhost" if it has none.
    public static func hostName() -> String {
        var name = [CChar](repeating: 0, count: 256)
        guard gethostname(&name, name.count - 1) == 0 else { return "localhost" }
        return String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    // MARK: Shared memory

    /// A file of `bytes` mapped read-write and shared (MAP_SHARED) with every process that maps
    /// it; made (and sized, zero-filled) when `create`, else opened as it is, its size checked.
    public static func mapSharedFile(_ path: String, bytes: Int, create: Bool) throws(SystemError) -> UnsafeMutableRawPointer {
        let flags = O_RDWR | O_CLOEXEC | (create ? O_CREAT | O_EXCL : 0)
        let fd = try retrying("open(\(path))") { Glibc.open(path, flags, 0o600) }
        defer { close(fd) }
        if create {
            guard ftruncate(fd, off_t(bytes)) == 0 else { throw SystemError("ftruncate(\(path))") }
        } else {
            var info = stat()
            guard fstat(fd, &info) == 0 else { throw SystemError("fstat(\(path))") }
            guard Int(info.st_size) == bytes else { throw SystemError("\(path) is \(info.st_size) bytes, not \(bytes)", errno: EINVAL) }
        }
        guard let memory = mmap(nil, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), memory != MAP_FAILED else {
            throw SystemError("mmap(\(path))")
        }
        return memory
    }

    public static func unmap(_ memory: UnsafeMutableRawPointer, bytes: Int) {
        _ = munmap(memory, bytes)
    }

    /// The process-shared, robust mutex at `memory` (CLinux's): its size, and init, lock, unlock.
    public static let sharedMutexBytes = Int(parley_shared_mutex_size())

    public static func initSharedMutex(_ memory: UnsafeMutableRawPointer) throws(SystemError) {
        let failed = parley_shared_mutex_init(memory)
        guard failed == 0 else { throw SystemError("pthread_mutex_init(shared)", errno: failed) }
    }

    public static func lockSharedMutex(_ memory: UnsafeMutableRawPointer) {
        let failed = parley_shared_mutex_lock(memory)
        precondition(failed == 0, "pthread_mutex_lock(shared): \(SystemError.reason(failed))")
    }

    public static func unlockSharedMutex(_ memory: UnsafeMutableRawPointer) {
        _ = parley_shared_mutex_unlock(memory)
    }

    // MARK: Processes

    /// `posix_spawn(3)` of this very executable (`/proc/self/exe`, so the child is the same
    /// build) with `arguments` (argv[0] first): see `spawn`.
    public static func spawnSelf(_ arguments: [String], standardOutput: Int32? = nil, standardError: Int32? = nil) throws(SystemError) -> pid_t {
        try spawn("/proc/self/exe", arguments, standardOutput: standardOutput, standardError: standardError)
    }

    /// `posix_spawn(3)` of the program at `path` with `arguments` (argv[0] first) and this
    /// process's environment. The child starts with every signal unblocked and SIGINT, SIGTERM,
    /// SIGHUP and SIGCHLD at their defaults, whatever this process had blocked to wait for them;
    /// `standardInput`, `standardOutput` and `standardError`, when given, become its 0, 1 and 2.
    public static func spawn(_ path: String, _ arguments: [String], standardInput: Int32? = nil, standardOutput: Int32? = nil,
                             standardError: Int32? = nil) throws(SystemError) -> pid_t {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGINT, SIGTERM, SIGHUP, SIGCHLD] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let standardInput { posix_spawn_file_actions_adddup2(&actions, standardInput, 0) }
        if let standardOutput { posix_spawn_file_actions_adddup2(&actions, standardOutput, 1) }
        if let standardError { posix_spawn_file_actions_adddup2(&actions, standardError, 2) }
        let cArguments: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, path, &actions, &attributes, cArguments, environ)
        guard rc == 0 else { throw SystemError("posix_spawn(\(path))", errno: rc) }
        return pid
    }

    /// `kill(2)`; a child already gone (ESRCH) is no error worth reporting.
    public static func signal(_ pid: pid_t, _ signal: Int32) {
        _ = Glibc.kill(pid, signal)
    }

    /// How a child ended: its exit status, or the signal that killed it.
    public enum ChildEnd: Equatable, Sendable {
        case exited(Int32)
        case killed(signal: Int32)
    }

    /// `waitpid(2)` for `pid` until it ends (EINTR retried).
    public static func waitForExit(_ pid: pid_t) throws(SystemError) -> ChildEnd {
        var status: Int32 = 0
        _ = try retrying("waitpid") { waitpid(pid, &status, 0) }
        return status & 0x7f == 0 ? .exited((status >> 8) & 0xff) : .killed(signal: status & 0x7f)
    }

    /// `access(2)` for reading: whether this process may read `path`.
    public static func canRead(_ path: String) -> Bool {
        access(path, R_OK) == 0
    }

    /// `mkdtemp(3)`: a new directory only this user may enter, `/tmp/<prefix>XXXXXX`.
    public static func makeTemporaryDirectory(prefix: String) throws(SystemError) -> String {
        var template = Array("/tmp/\(prefix)XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw SystemError("mkdtemp") }
        return String(cString: made)
    }

    /// `pipe2(2)` with O_CLOEXEC (through CLinux: Glibc does not export `pipe2` to Swift): the read
    /// and the write end. A spawned child gets an end only by `spawnSelf`'s dup2, never by
    /// inheritance: close-on-exec from the start, not set after `pipe(2)`, in which gap a process
    /// spawned by another thread could inherit the write end and hold the reader's end of file off
    /// for as long as it lived (most likely why a test waiting on a helper that had died waited
    /// 434 s in one parallel run).
    public static func pipe() throws(SystemError) -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        _ = try retrying("pipe2") { CLinux.parley_pipe_cloexec(&fds) }
        return (fds[0], fds[1])
    }

    /// A small file whole (a key file, a /proc file), at most `maxBytes`; nil if it cannot be
    /// read or is larger.
    public static func readFile(_ path: String, maxBytes: Int = 1 << 20) -> [UInt8]? {
        guard let fd = try? openReadOnly(path) else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let result = chunk.withUnsafeMutableBytes { try? read(fd, into: $0) }
            switch result {
            case .transferred(let n)?:
                bytes += chunk[0..<n]
                if bytes.count > maxBytes { return nil }
            case .endOfFile?: return bytes
            case .wouldBlock?, nil: return nil
            }
        }
    }

    /// A small file written whole (a key `parley token` makes), created with `mode` or truncated;
    /// the mode applies as the file is made, so a private key is never readable by others.
    public static func writeFile(_ path: String, _ bytes: [UInt8], mode: UInt32) throws(SystemError) {
        let fd = try retrying("open(\(path))") { Glibc.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode) }
        defer { close(fd) }
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n > 0 { offset += n } else if n < 0 && errno == EINTR { continue } else { throw SystemError("write(\(path))") }
        }
    }

    // MARK: Files that grow (recordings)

    /// `open(2)` of a new file (O_EXCL: never someone else's) for writing, with `mode`.
    public static func createNew(_ path: String, mode: UInt32) throws(SystemError) -> Int32 {
        try retrying("open(\(path))") { Glibc.open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode) }
    }

    /// write(2) of all of `bytes` to a blocking file, retrying short writes and EINTR.
    public static func writeWhole(_ fd: Int32, _ bytes: [UInt8]) throws(SystemError) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n > 0 { offset += n } else if n < 0 && errno == EINTR { continue } else { throw SystemError("write") }
        }
    }

    /// `mkdir(2)` with `mode`; a directory already there is fine.
    public static func makeDirectory(_ path: String, mode: UInt32) throws(SystemError) {
        if Glibc.mkdir(path, mode) != 0 && errno != EEXIST { throw SystemError("mkdir(\(path))") }
    }

    /// When `path` was last written (seconds since the epoch), nil if it cannot be read.
    public static func modificationTime(_ path: String) -> Double? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9
    }

    /// `unlink(2)`; false if the file could not be removed.
    @discardableResult
    public static func remove(_ path: String) -> Bool { unlink(path) == 0 }

    // MARK: Sockets

    /// The kinds of socket Parley opens: TCP streams, non-blocking or blocking.
    public enum Blocking: Sendable { case nonBlocking, blocking }

    /// socket(2) for a stream of `family` (AF_INET or AF_INET6 for TCP, AF_UNIX for a local
    /// helper), close-on-exec.
    public static func streamSocket(family: Int32, _ blocking: Blocking = .nonBlocking) throws(SystemError) -> Int32 {
        let flags = Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue) | (blocking == .nonBlocking ? Int32(SOCK_NONBLOCK.rawValue) : 0)
        return try retrying("socket") { Glibc.socket(family, flags, 0) }
    }

    /// connect(2). On a non-blocking socket, true when the connection is complete and false when it
    /// is in progress (EINPROGRESS: the first writable edge reports the outcome, see `socketError`).
    public static func connect(_ fd: Int32, to address: SocketAddress) throws(SystemError) -> Bool {
        let rc = address.withSockaddr { Glibc.connect(fd, $0, $1) }
        if rc == 0 { return true }
        if errno == EINPROGRESS || errno == EINTR { return false }  // EINTR: the connect goes on in the background
        throw SystemError("connect(\(address))")
    }

    /// bind(2) to a source address before connecting; `reservePort: false` sets
    /// IP_BIND_ADDRESS_NO_PORT so the kernel picks the port at connect(2), unique for the whole
    /// 4-tuple (a load client's tens of thousands of connections from a few source addresses).
    public static func bind(_ fd: Int32, to address: SocketAddress, reservePort: Bool = true) throws(SystemError) {
        // From <linux/in.h>, which Glibc does not export.
        let ipBindAddressNoPort: Int32 = 24
        if !reservePort { try setOption(fd, Int32(IPPROTO_IP), ipBindAddressNoPort, 1) }
        _ = try retrying("bind(\(address))") { address.withSockaddr { Glibc.bind(fd, $0, $1) } }
    }

    /// bind(2) then listen(2), with SO_REUSEADDR and SO_REUSEPORT so that every loop (and every
    /// worker process) listens on the same port and the kernel spreads connections among them;
    /// without (`sharedPort: false`) for a Unix socket, which has no port to share.
    public static func listen(_ fd: Int32, on address: SocketAddress, backlog: Int32 = 4096, sharedPort: Bool = true) throws(SystemError) {
        if sharedPort {
            try setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1)
            try setOption(fd, SOL_SOCKET, SO_REUSEPORT, 1)
        }
        _ = try retrying("bind(\(address))") { address.withSockaddr { Glibc.bind(fd, $0, $1) } }
        _ = try retrying("listen") { Glibc.listen(fd, backlog) }
    }

    // MARK: Datagrams (WebRTC's and SIP's media: one UDP socket per loop, many peers on it)

    /// socket(2) for UDP datagrams of `family` (AF_INET or AF_INET6), non-blocking, close-on-exec.
    public static func datagramSocket(family: Int32) throws(SystemError) -> Int32 {
        try retrying("socket") { Glibc.socket(family, Int32(SOCK_DGRAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0) }
    }

    /// bind(2) of a datagram socket to `address`. A media port is its loop's alone (no
    /// SO_REUSEPORT: a call's datagrams must reach the loop that holds the call); a `shared` one
    /// (SIP's signalling port) is bound by every loop, and the kernel hands each sender's datagrams
    /// to one of them by a hash of the addresses, the same one each time.
    public static func bindDatagram(_ fd: Int32, to address: SocketAddress, shared: Bool = false) throws(SystemError) {
        if shared { try setOption(fd, SOL_SOCKET, SO_REUSEPORT, 1) }
        _ = try retrying("bind(\(address))") { address.withSockaddr { Glibc.bind(fd, $0, $1) } }
    }

    /// A UDP socket of `host`'s family bound at the first free port of `ports` (`[0]`: the
    /// kernel's choice), and the address it took; nothing left open when none is free.
    public static func boundDatagramSocket(host: SocketAddress, ports: [Int]) throws(SystemError) -> (fd: Int32, local: SocketAddress) {
        let fd = try datagramSocket(family: host.family)
        var failure = SystemError("bind: no port of the range is free")
        for port in ports {
            do throws(SystemError) {
                try bindDatagram(fd, to: host.withPort(UInt16(port)))
                return (fd, try localAddress(fd))
            } catch {
                failure = error
            }
        }
        close(fd)
        throw failure
    }

    /// recvfrom(2) of one datagram into `buffer`, its sender in `from`: the datagram's length, or nil
    /// when none is waiting. A datagram longer than `buffer` is cut (MSG_TRUNC is not asked for:
    /// the media layer's datagrams are all under 1,500 bytes, and a longer one is malformed anyway).
    public static func receiveDatagram(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, from: inout SocketAddress) throws(SystemError) -> Int? {
        try datagram("recvfrom", from: &from) { pointer, length in recvfrom(fd, buffer.baseAddress, buffer.count, 0, pointer, length) }
    }

    /// One datagram through `receive` into `from`'s address: retried on EINTR, nil when none waits.
    @inline(__always)
    private static func datagram(_ call: String, from: inout SocketAddress,
                                 _ receive: (UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) -> Int) throws(SystemError) -> Int? {
        while true {
            let n = try from.withMutableSockaddr { pointer, length throws(SystemError) in receive(pointer, length) }
            if n >= 0 { return n }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK { return nil }
            throw SystemError(call)
        }
    }

    /// SO_TIMESTAMPNS on a datagram socket: each datagram then carries when the kernel took it in,
    /// which `receiveDatagram(_:into:from:receivedAt:)` reads (a load client's measure of when a
    /// peer sent, whatever its own thread was doing then).
    public static func timestampReceptions(_ fd: Int32) throws(SystemError) {
        _ = try retrying("setsockopt(SO_TIMESTAMPNS)") { parley_enable_receive_timestamps(fd) }
    }

    /// recvmsg(2) of one datagram, as `receiveDatagram(_:into:from:)`, with the kernel's receive
    /// time in `receivedAt` (CLOCK_REALTIME nanoseconds; 0 unless `timestampReceptions` was set).
    public static func receiveDatagram(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, from: inout SocketAddress,
                                       receivedAt: inout Int64) throws(SystemError) -> Int? {
        var at: Int64 = 0
        defer { receivedAt = at }
        return try datagram("recvmsg", from: &from) { pointer, length in
            parley_receive_timestamped(fd, buffer.baseAddress, UInt(buffer.count), pointer, length, &at)
        }
    }

    /// sendto(2) of one datagram. False when the socket's buffer is full (EAGAIN): a media datagram
    /// is dropped then, as the network would drop it, rather than queued behind the next one.
    @discardableResult
    public static func sendDatagram(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, to address: SocketAddress) throws(SystemError) -> Bool {
        while true {
            let n = address.withSockaddr { Glibc.sendto(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL), $0, $1) }
            if n >= 0 { return true }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK { return false }
            throw SystemError("sendto(\(address))")
        }
    }

    /// accept4(2) with SOCK_NONBLOCK | SOCK_CLOEXEC; nil when no connection is pending.
    public static func accept(_ fd: Int32) throws(SystemError) -> Int32? {
        while true {
            let client = parley_accept(fd)
            if client >= 0 { return client }
            switch errno {
            case EINTR, ECONNABORTED: continue
            case EAGAIN, EWOULDBLOCK: return nil
            default: throw SystemError("accept4")
            }
        }
    }

    /// getpeername(2): the address of the other end of a connected socket.
    public static func peerAddress(_ fd: Int32) throws(SystemError) -> SocketAddress {
        var address = SocketAddress()
        _ = try address.withMutableSockaddr { pointer, length throws(SystemError) in
            try retrying("getpeername") { getpeername(fd, pointer, length) }
        }
        return address
    }

    /// getsockname(2): the address a socket is bound to.
    public static func localAddress(_ fd: Int32) throws(SystemError) -> SocketAddress {
        var address = SocketAddress()
        _ = try address.withMutableSockaddr { pointer, length throws(SystemError) in
            try retrying("getsockname") { getsockname(fd, pointer, length) }
        }
        return address
    }

    /// The pending error of a socket (SO_ERROR): how a non-blocking connect ended. 0 on success.
    public static func socketError(_ fd: Int32) -> Int32 {
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        return getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 ? error : errno
    }

    public static func setOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) throws(SystemError) {
        var v = value
        _ = try retrying("setsockopt") {
            setsockopt(fd, level, name, &v, socklen_t(MemoryLayout<Int32>.size))
        }
    }

    /// Turns Nagle's algorithm off: frames are small and must not wait for an ACK.
    public static func setNoDelay(_ fd: Int32) {
        try? setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
    }

    /// fcntl(2): clears O_NONBLOCK, for a descriptor a thread of its own reads and writes in turn
    /// (`accept` makes every socket non-blocking).
    public static func setBlocking(_ fd: Int32) throws(SystemError) {
        let flags = fcntl(fd, F_GETFL)
        guard flags >= 0, fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == 0 else { throw SystemError("fcntl") }
    }

    /// shutdown(2) for writing: our FIN, while the peer may still send.
    public static func shutdownWrite(_ fd: Int32) {
        _ = Glibc.shutdown(fd, Int32(SHUT_WR))
    }

    /// send(2) of what fits, without blocking and without SIGPIPE; for a last word on a socket
    /// about to be closed (a 503 to a connection over the limit).
    public static func sendOnce(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) {
        _ = Glibc.send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
    }

    // MARK: Name resolution

    /// getaddrinfo(3) for a TCP stream: the addresses of `host` at `port`, in the resolver's order.
    /// `passive` asks for addresses to listen on (a nil host then means every interface);
    /// `numericOnly` takes an address literal only, and never asks DNS.
    /// Blocking for a name: Parley resolves its listening address once and each upstream once per
    /// loop; a name on a loop's path goes through `Resolver`, off the loop.
    public static func resolve(host: String, port: Int, passive: Bool = false, numericOnly: Bool = false) throws(SystemError) -> [SocketAddress] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0) | (numericOnly ? AI_NUMERICHOST : 0)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        guard rc == 0, list != nil else {
            throw SystemError("getaddrinfo(\(host)): \(String(cString: gai_strerror(rc)))", errno: EINVAL)
        }
        defer { freeaddrinfo(list) }
        var addresses: [SocketAddress] = []
        var next = list
        while let info = next {
            addresses.append(SocketAddress(UnsafeRawBufferPointer(start: info.pointee.ai_addr, count: Int(info.pointee.ai_addrlen))))
            next = info.pointee.ai_next
        }
        return addresses
    }

    // MARK: Signals

    /// Blocks `signals` in this thread (and the threads it starts later, which inherit the mask),
    /// so that only `waitForSignal` sees them: the way a multi-threaded server takes SIGTERM.
    public static func blockSignals(_ signals: [Int32]) -> sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in signals { sigaddset(&set, signal) }
        pthread_sigmask(SIG_BLOCK, &set, nil)
        return set
    }

    /// Waits for one of the blocked `signals` (sigwait, or sigtimedwait with a time-out); nil when
    /// the time-out passed first.
    public static func waitForSignal(_ signals: sigset_t, timeoutSeconds: Double? = nil) -> Int32? {
        var set = signals
        guard let timeoutSeconds else {
            var received: Int32 = 0
            return sigwait(&set, &received) == 0 ? received : nil
        }
        var timeout = timespec(tv_sec: Int(timeoutSeconds), tv_nsec: Int((timeoutSeconds - timeoutSeconds.rounded(.down)) * 1e9))
        let received = sigtimedwait(&set, nil, &timeout)
        return received > 0 ? received : nil
    }

    // MARK: Process

    /// User plus system CPU seconds of the whole process, every thread (getrusage(2)).
    public static func processCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    /// write(2) of all of `bytes` to a blocking descriptor (stderr), retrying short writes and
    /// EINTR; gives up quietly on an error (a log line has nowhere else to go).
    public static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) {
        var offset = 0
        while offset < bytes.count {
            let n = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n > 0 { offset += n } else if n < 0 && errno == EINTR { continue } else { return }
        }
    }

    // MARK: epoll and eventfd (for the loop's backend, `Epoll`, and the load client's poller)

    public static func epollCreate() throws(SystemError) -> Int32 {
        try retrying("epoll_create1") { epoll_create1(Int32(EPOLL_CLOEXEC)) }
    }

    /// epoll_ctl(2) ADD or MOD: `events` (EPOLLIN...) reported with `token` as the user data.
    public static func epollControl(_ epfd: Int32, _ op: Int32, _ fd: Int32, events: UInt32, token: UInt64) throws(SystemError) {
        var event = epoll_event()
        event.events = events
        event.data.u64 = token
        _ = try retrying("epoll_ctl") { epoll_ctl(epfd, op, fd, &event) }
    }

    /// epoll_ctl(2) DEL. Closing a descriptor removes it too; this is for descriptors that stay open.
    public static func epollRemove(_ epfd: Int32, _ fd: Int32) {
        _ = epoll_ctl(epfd, EPOLL_CTL_DEL, fd, nil)
    }

    /// epoll_pwait2(2), whose time-out is a `timespec` (Linux 5.11). EINTR and time-outs both mean
    /// nothing is ready (0); nil: the kernel has no epoll_pwait2 (ENOSYS, or a seccomp filter that
    /// refuses it), and the caller falls back to `epollWait(timeoutMilliseconds:)`.
    public static func epollWait(_ epfd: Int32, _ events: UnsafeMutablePointer<epoll_event>, capacity: Int,
                                 timeoutNanoseconds: UInt64) -> Int? {
        var timeout = timespec(tv_sec: Int(timeoutNanoseconds / 1_000_000_000), tv_nsec: Int(timeoutNanoseconds % 1_000_000_000))
        let ready = epoll_pwait2(epfd, events, Int32(capacity), &timeout, nil)
        if ready < 0 && (errno == ENOSYS || errno == EPERM) { return nil }
        return max(0, Int(ready))
    }

    /// epoll_wait(2), whose time-out is in whole milliseconds; EINTR and time-outs both mean
    /// nothing is ready (0).
    public static func epollWait(_ epfd: Int32, _ events: UnsafeMutablePointer<epoll_event>, capacity: Int,
                                 timeoutMilliseconds: Int32) -> Int {
        max(0, Int(epoll_wait(epfd, events, Int32(capacity), timeoutMilliseconds)))
    }

    public static func eventfd() throws(SystemError) -> Int32 {
        try retrying("eventfd") { CLinux.eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC)) }
    }

    /// Adds one to an eventfd counter, waking whoever polls it.
    public static func signal(eventfd fd: Int32) {
        var one: UInt64 = 1
        _ = Glibc.write(fd, &one, 8)
    }

    /// Resets an eventfd counter after a wake-up.
    public static func drain(eventfd fd: Int32) {
        var value: UInt64 = 0
        _ = Glibc.read(fd, &value, 8)
    }
}
