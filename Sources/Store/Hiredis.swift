internal import CHiredis
import Loop

/// A Redis reply, copied out of hiredis's reply object (which hiredis frees when the callback
/// returns). Strings are bytes: Redis is binary-safe and a value is not always UTF-8.
public enum RedisReply: Sendable, Equatable {
    case string([UInt8])
    case integer(Int)
    case array([RedisReply])
    /// A missing key or field (RESP's nil bulk string or nil array); `null`, since `nil` would read
    /// as Optional's.
    case null
    /// A simple string such as "OK" or "QUEUED".
    case status(String)
    /// An error reply ("WRONGTYPE ..."): Redis answered, the command failed.
    case error(String)

    /// A string or status reply as text.
    public var text: String? {
        switch self {
        case .string(let bytes): String(decoding: bytes, as: UTF8.self)
        case .status(let text): text
        default: nil
        }
    }

    /// Copies hiredis's reply tree. Types RESP3 added in later hiredis versions (doubles, maps,
    /// booleans) are never asked for with RESP2, so they become errors rather than guesses.
    init(_ reply: UnsafePointer<redisReply>) {
        let r = reply.pointee
        func bytes() -> [UInt8] {
            guard let str = r.str, r.len > 0 else { return [] }
            return Array(UnsafeRawBufferPointer(start: str, count: r.len))
        }
        switch r.type {
        case REDIS_REPLY_STRING: self = .string(bytes())
        case REDIS_REPLY_INTEGER: self = .integer(Int(r.integer))
        case REDIS_REPLY_NIL: self = .null
        case REDIS_REPLY_STATUS: self = .status(String(decoding: bytes(), as: UTF8.self))
        case REDIS_REPLY_ERROR: self = .error(String(decoding: bytes(), as: UTF8.self))
        case REDIS_REPLY_ARRAY:
            var elements: [RedisReply] = []
            elements.reserveCapacity(r.elements)
            for i in 0..<r.elements {
                guard let element = r.element[i] else { elements.append(.null); continue }
                elements.append(RedisReply(element))
            }
            self = .array(elements)
        default: self = .error("unsupported reply type \(r.type)")
        }
    }
}

/// Why a command got no reply. A reply of Redis's own `-ERR` kind is not one of these: it is a
/// `RedisReply.error`.
public enum RedisError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The connection could not be made (refused, timed out, the name did not resolve).
    case connectFailed(String)
    /// The connection dropped, or the peer sent something that is not RESP, with the command in flight.
    case connectionLost(String)
    /// Not connected: the command failed at once, nothing was queued.
    case down
    /// Too many commands in flight on the connection (Redis stalled): failed at once.
    case busy
    /// The client was closed.
    case closed

    public var description: String {
        switch self {
        case .connectFailed(let why): "could not connect to redis: \(why)"
        case .connectionLost(let why): "the connection to redis was lost: \(why)"
        case .down: "redis is unreachable"
        case .busy: "too many redis commands in flight"
        case .closed: "the redis client was closed"
        }
    }
}

/// The one wrapper of hiredis: one `redisAsyncContext` driven by one Parley event loop.
///
/// hiredis's async API does no I/O waiting of its own; it asks its event library, through the
/// `ev.addRead/delRead/addWrite/delWrite/cleanup` hooks, to watch its descriptor, and expects
/// `redisAsyncHandleRead/Write` to be called when the descriptor is ready. Here that library is the
/// loop: the descriptor is registered level-triggered (hiredis reads once per call, as its own ae
/// adapter assumes) and the hooks change the interest.
///
/// hiredis makes the socket and the non-blocking connect itself (socket, connect, and, for a
/// host name, a blocking getaddrinfo): C at the edge, like OpenSSL's reads and writes, and the one
/// exception to "every syscall in Sys". It is only ever given an address: `RedisClient` resolves a
/// name first, off the loop (`Resolver`), so the loop never waits on DNS.
///
/// Lifetime: hiredis frees its context itself when the connection fails or drops; `cleanup` is
/// its last word about the descriptor, so the registration ends there, before hiredis closes it.
/// The owner must keep this object alive until `onClosed` has run (or call `close()`).
final class HiredisConnection {
    private var context: UnsafeMutablePointer<redisAsyncContext>?
    unowned(unsafe) let loop: EventLoop
    private var watcher: HiredisWatcher?
    private var reading = false
    private var writing = false
    private(set) var isConnected = false
    /// What `onClosed` reports when the close was asked for here rather than hiredis's doing.
    private var closeReason: RedisError?

    /// The connection is established (hiredis saw the first writable event without an error).
    var onConnected: (() -> Void)?
    /// The context is gone: the connect failed, the connection dropped, or `close()` was called.
    /// Every command in flight has already been told (`connectionLost`).
    var onClosed: ((RedisError) -> Void)?

    /// Starts a non-blocking connect; its outcome comes as `onConnected` or `onClosed`.
    init(host: String, port: Int, loop: EventLoop) throws(RedisError) {
        self.loop = loop
        guard let ac = redisAsyncConnect(host, Int32(port)) else { throw .connectFailed("out of memory") }
        if ac.pointee.err != 0 {
            let why = ac.pointee.errstr.map { String(cString: $0) } ?? "error \(ac.pointee.err)"
            redisAsyncFree(ac)
            throw .connectFailed(why)
        }
        context = ac
        let me = Unmanaged.passUnretained(self).toOpaque()
        ac.pointee.data = me
        ac.pointee.ev.data = me
        // The trampolines: hiredis calls plain C functions with our pointer; each finds this object.
        ac.pointee.ev.addRead = { HiredisConnection.from($0).watch(read: true, write: nil) }
        ac.pointee.ev.delRead = { HiredisConnection.from($0).watch(read: false, write: nil) }
        ac.pointee.ev.addWrite = { HiredisConnection.from($0).watch(read: nil, write: true) }
        ac.pointee.ev.delWrite = { HiredisConnection.from($0).watch(read: nil, write: false) }
        ac.pointee.ev.cleanup = { HiredisConnection.from($0).contextFreed() }
        // Also arms the write interest: the first writable event reports the connect's outcome.
        redisAsyncSetConnectCallback(ac) { ac, status in
            guard status == REDIS_OK, let data = ac?.pointee.data else { return }  // a failure comes as cleanup
            HiredisConnection.from(data).connected()
        }
    }

    deinit {
        // The owner closes before letting go; a context left open would call into freed memory.
        assert(context == nil, "HiredisConnection released while its context is open")
    }

    private static func from(_ pointer: UnsafeMutableRawPointer?) -> HiredisConnection {
        Unmanaged<HiredisConnection>.fromOpaque(pointer!).takeUnretainedValue()
    }

    /// Queues one command (hiredis formats it into its output buffer and writes it when the socket
    /// is writable; replies come back in order, so any number may be in flight). False when the
    /// context is gone or going, and then `done` is never called.
    func send(_ arguments: [[UInt8]], _ done: @escaping (Result<RedisReply, RedisError>) -> Void) -> Bool {
        guard let ac = context else { return false }
        // One buffer for every argument (plus a byte, so an all-empty command still has an
        // address); hiredis copies the arguments before redisAsyncCommandArgv returns.
        var joined: [UInt8] = []
        joined.reserveCapacity(arguments.reduce(1) { $0 + $1.count })
        var lengths: [Int] = []
        lengths.reserveCapacity(arguments.count)
        for argument in arguments {
            joined.append(contentsOf: argument)
            lengths.append(argument.count)
        }
        joined.append(0)
        let pending = Unmanaged.passRetained(PendingReply(done)).toOpaque()
        let status = joined.withUnsafeBufferPointer { buffer in
            let base = UnsafeRawPointer(buffer.baseAddress!).assumingMemoryBound(to: CChar.self)
            var pointers: [UnsafePointer<CChar>?] = []
            pointers.reserveCapacity(arguments.count)
            var offset = 0
            for length in lengths {
                pointers.append(base + offset)
                offset += length
            }
            return redisAsyncCommandArgv(ac, { ac, reply, privdata in
                // Called once per command: with its reply, or with none when the context is freed.
                let pending = Unmanaged<PendingReply>.fromOpaque(privdata!).takeRetainedValue()
                guard let reply else {
                    return pending.done(.failure(.connectionLost(HiredisConnection.errorText(ac))))
                }
                pending.done(.success(RedisReply(reply.assumingMemoryBound(to: redisReply.self))))
            }, pending, Int32(arguments.count), &pointers, lengths)
        }
        guard status == REDIS_OK else {
            Unmanaged<PendingReply>.fromOpaque(pending).release()
            return false
        }
        return true
    }

    /// Frees the context now: commands in flight fail (`connectionLost`), then `onClosed(reason)`.
    /// Inside a reply callback hiredis defers the free until the callback returns.
    func close(_ reason: RedisError = .closed) {
        guard context != nil else { return }
        if closeReason == nil { closeReason = reason }
        intoHiredis { redisAsyncFree($0) }
    }

    /// Runs one of hiredis's functions that may call back into Parley (replies, the connect, the
    /// free's failed commands). Two things hold while it runs:
    /// - A write asked for from a callback (a reply's completion sending more, `flush`) waits until
    ///   hiredis has returned. hiredis 0.14 frees its context inside a write that fails, without
    ///   looking whether a callback is running, and the reply loop it returns to then reads freed
    ///   memory: a node segfaulted so at a Redis kill -9 (make chaos in CI, 2026-11-28;
    ///   RedisClientTests' reset peer did it every time).
    /// - This object lives until the call returns: a context freed inside tells the owner, which
    ///   lets go of it (`RedisClient.lost`).
    private func intoHiredis(_ call: (UnsafeMutablePointer<redisAsyncContext>) -> Void) {
        guard let ac = context else { return }
        let kept = Unmanaged.passRetained(self)
        defer { kept.release() }
        callDepth += 1
        call(ac)
        callDepth -= 1
        guard callDepth == 0, flushWanted else { return }
        flushWanted = false
        flush()
    }

    /// How many of `intoHiredis`'s calls are under way (hiredis calls back, and Parley calls in again).
    private var callDepth = 0
    /// A `flush` asked for while hiredis was running: made when it has returned.
    private var flushWanted = false

    // MARK: The adapter

    /// hiredis's add/del hooks: the registration is made on the first interest and kept, its
    /// interest changed, until `cleanup`.
    private func watch(read: Bool?, write: Bool?) {
        if let read { reading = read }
        if let write { writing = write }
        guard let ac = context else { return }
        var interest: Interest = []
        if reading { interest.insert(.readable) }
        if writing { interest.insert(.writable) }
        let fd = ac.pointee.c.fd
        if let watcher {
            return loop.modify(watcher.registration, fd: fd, interest)
        }
        do {
            watcher = try loop.register(fd, interest) { HiredisWatcher(registration: $0, connection: self) }
        } catch {
            // The loop could not take the descriptor: give up this connection on the next pass (not
            // here, inside hiredis's own call).
            loop.schedule(after: 0) { [weak self] in self?.close(.connectFailed("\(error)")) }
        }
    }

    fileprivate func readable() {
        guard reading else { return }
        intoHiredis { redisAsyncHandleRead($0) }  // may free the context (then `cleanup` has run)
    }

    fileprivate func writable() {
        guard writing else { return }
        intoHiredis { redisAsyncHandleWrite($0) }
    }

    /// Writes what is queued now rather than at the loop's next pass: a store write is in the
    /// kernel before the event that says its item is done is even queued for the client, so a
    /// process killed in between does not take it along (the kernel still sends what was written).
    /// Asked for from within hiredis (a reply's callback), it is made as hiredis returns, still
    /// before the loop's end of pass writes the clients' events.
    func flush() {
        guard isConnected, writing, context != nil else { return }
        guard callDepth == 0 else { return flushWanted = true }
        intoHiredis { redisAsyncHandleWrite($0) }
    }

    private func connected() {
        isConnected = true
        onConnected?()
    }

    /// hiredis's cleanup hook: the context is being freed and the descriptor is about to be closed.
    private func contextFreed() {
        let ac = context
        context = nil
        if let watcher { loop.deregister(watcher.registration) }
        watcher = nil
        reading = false
        writing = false
        let why = HiredisConnection.errorText(ac)
        let reason = closeReason ?? (isConnected ? .connectionLost(why) : .connectFailed(why))
        isConnected = false
        onConnected = nil
        let closed = onClosed
        onClosed = nil
        closed?(reason)
    }

    /// The context's error text (hiredis keeps it in a fixed buffer in the context).
    private static func errorText(_ ac: UnsafeMutablePointer<redisAsyncContext>?) -> String {
        guard let ac else { return "closed" }
        guard ac.pointee.c.err != 0 else { return "closed" }
        let text = withUnsafeBytes(of: &ac.pointee.c.errstr) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        return text.isEmpty ? "error \(ac.pointee.c.err)" : text
    }
}

/// A command's completion, retained across hiredis (its `privdata`) until its reply callback.
private final class PendingReply {
    let done: (Result<RedisReply, RedisError>) -> Void
    init(_ done: @escaping (Result<RedisReply, RedisError>) -> Void) { self.done = done }
}

/// The context's descriptor as the loop sees it: readiness goes to hiredis's handle functions.
private final class HiredisWatcher: LoopRegistrant {
    let registration: Registration
    unowned(unsafe) let connection: HiredisConnection

    init(registration: Registration, connection: HiredisConnection) {
        self.registration = registration
        self.connection = connection
    }

    override func readable(hungUp: Bool) { connection.readable() }
    override func writable() { connection.writable() }
    override func loopStopped() { connection.close() }
}
