import JSON
import Loop
import Models
#if canImport(Glibc)
import Glibc
#endif

/// One loop's connection to the speech helper, on that loop: requests go out framed
/// (`SpeechHelperFrame`), answers come back by `id` in any order, each to its caller on this loop.
/// Every request has a deadline; a request the helper cannot take now (down, starting, the
/// connection lost) fails at once, so a caller's fallback rule serves without waiting.
///
/// Made on a loop's first request (`SpeechHelperConnection.on(loop, status)`), kept for the loop's
/// life, and reconnected when the helper comes back as a new generation.
final class SpeechHelperConnection {
    typealias Answer = (Result<SpeechHelperFrame, ModelError>) -> Void

    unowned(unsafe) let loop: EventLoop
    let status: SpeechHelperStatus
    private var socket: Socket?
    private var nextID: UInt64 = 0
    /// Requests out, by id. A streaming one (`speak`) answers with several frames, its deadline
    /// re-armed by each, until one says `done` (or `error`).
    private var pending: [UInt64: Pending] = [:]

    private struct Pending {
        let answer: Answer
        var deadline: ScheduledTask
        let timeout: Double
        let streaming: Bool
    }

    init(loop: EventLoop, status: SpeechHelperStatus) {
        self.loop = loop
        self.status = status
    }

    /// Sends `bytes` (a frame whose header carries `id`, made by `frame(id)`), and calls `answer`
    /// once: with the helper's reply, or a failure (unavailable, timed out, lost). Returns the id,
    /// for `cancel`, or nil when it failed at once (the failure is delivered on a later pass, never
    /// inside this call, so callers never see their answer before their request returns).
    @discardableResult
    func request(timeout seconds: Double, streaming: Bool = false, _ frame: (UInt64) -> [UInt8], _ answer: @escaping Answer) -> UInt64? {
        guard let socket = connected() else {
            _ = loop.schedule(after: 0) { answer(.failure(Self.unavailable("the speech helper is not running"))) }
            return nil
        }
        nextID &+= 1
        let id = nextID
        pending[id] = Pending(answer: answer, deadline: arm(id, seconds), timeout: seconds, streaming: streaming)
        socket.send(frame(id))
        return id
    }

    private func arm(_ id: UInt64, _ seconds: Double) -> ScheduledTask {
        loop.schedule(after: seconds) { [weak self] in
            self?.finish(id, .failure(ModelError(code: "speech_helper_timeout", message: "the speech helper did not answer within \(seconds) s", retryable: true)))
        }
    }

    /// The caller no longer wants the answer; a streaming request is also told to stop.
    func cancel(_ id: UInt64) {
        guard let entry = pending.removeValue(forKey: id) else { return }
        entry.deadline.cancel()
        if entry.streaming {
            socket?.send(SpeechHelperFrame(header: .object([("op", .string("cancel")), ("id", .int(Int(id)))])).encoded())
        }
    }

    private func connected() -> Socket? {
        guard let generation = status.readyGeneration else {
            socket?.close()
            socket = nil
            return nil
        }
        if let socket, socket.generation == generation, !socket.isClosed { return socket }
        socket?.close()
        socket = Socket.open(status.socketPath, generation: generation, loop: loop, owner: self)
        return socket
    }

    fileprivate func received(_ frame: SpeechHelperFrame) {
        guard let id = frame.header["id"]?.int.flatMap(UInt64.init(exactly:)) else { return }
        if let error = frame.header["error"]?.string {
            return finish(id, .failure(ModelError(code: "speech_helper_error", message: error)))
        }
        if var entry = pending[id], entry.streaming, frame.header["done"]?.bool != true {
            entry.deadline.cancel()
            entry.deadline = arm(id, entry.timeout)
            pending[id] = entry
            return entry.answer(.success(frame))
        }
        finish(id, .success(frame))
    }

    /// The connection ended: every request on it fails now.
    fileprivate func lost(_ why: String) {
        socket = nil
        let failed = pending
        pending = [:]
        for (_, entry) in failed {
            entry.deadline.cancel()
            entry.answer(.failure(Self.unavailable(why)))
        }
    }

    private func finish(_ id: UInt64, _ result: Result<SpeechHelperFrame, ModelError>) {
        guard let entry = pending.removeValue(forKey: id) else { return }
        entry.deadline.cancel()
        entry.answer(result)
    }

    static func unavailable(_ why: String) -> ModelError {
        ModelError(code: "speech_helper_unavailable", message: why, retryable: true)
    }

    /// The loop's connection, made on first use.
    static func on(_ loop: EventLoop, _ status: SpeechHelperStatus) -> SpeechHelperConnection {
        loop.local { SpeechHelperConnections() }.connection(loop, status)
    }

    /// The Unix socket itself, registered with the loop.
    final class Socket: LoopRegistrant {
        let fd: Int32
        let generation: Int
        private let registration: Registration
        unowned(unsafe) let loop: EventLoop
        private weak var owner: SpeechHelperConnection?
        private var outbound = ByteBuffer()
        private var reader = SpeechHelperFrame.Reader()
        private(set) var isClosed = false

        private init(fd: Int32, generation: Int, registration: Registration, loop: EventLoop, owner: SpeechHelperConnection) {
            self.fd = fd
            self.generation = generation
            self.registration = registration
            self.loop = loop
            self.owner = owner
        }

        /// A Unix socket's connect completes at once or fails at once (no EINPROGRESS).
        static func open(_ path: String, generation: Int, loop: EventLoop, owner: SpeechHelperConnection) -> Socket? {
            guard let address = SocketAddress.unix(path: path), let fd = try? Sys.streamSocket(family: AF_UNIX) else { return nil }
            do {
                guard try Sys.connect(fd, to: address) else {
                    Sys.close(fd)
                    return nil
                }
                return try loop.register(fd, [.readable, .writable, .edge]) { registration in
                    Socket(fd: fd, generation: generation, registration: registration, loop: loop, owner: owner)
                }
            } catch {
                Sys.close(fd)
                return nil
            }
        }

        func send(_ bytes: [UInt8]) {
            bytes.withUnsafeBytes { outbound.append($0) }
            flush()
        }

        override func writable() { flush() }

        override func readable(hungUp: Bool) {
            while !isClosed {
                let buffer = loop.readBuffer
                let result: Sys.IOResult
                do { result = try Sys.read(fd, into: buffer) } catch { return lose("\(error)") }
                switch result {
                case .wouldBlock: return
                case .endOfFile: return lose("the speech helper closed the connection")
                case .transferred(let n):
                    let frames: [SpeechHelperFrame]
                    do { frames = try reader.read(UnsafeRawBufferPointer(rebasing: buffer[0..<n])) } catch { return lose("the speech helper sent \(error)") }
                    for frame in frames { owner?.received(frame) }
                }
            }
        }

        private func flush() {
            while !outbound.isEmpty && !isClosed {
                let result: Sys.IOResult
                do { result = try Sys.write(fd, UnsafeRawBufferPointer(outbound.readable)) } catch { return lose("\(error)") }
                guard case .transferred(let n) = result else { return }  // the next writable edge resumes
                outbound.consume(n)
            }
        }

        private func lose(_ why: String) {
            close()
            owner?.lost(why)
        }

        func close() {
            guard !isClosed else { return }
            isClosed = true
            outbound.release()
            loop.deregister(registration)
            Sys.close(fd)
        }

        override func loopStopped() { close() }
    }
}

/// A request to the helper as a `ModelCall`: cancelling it drops the answer, and stops a `speak`
/// after its clause (a verdict's or a decode's work, tens of ms, runs out).
final class SpeechHelperCall: ModelCall {
    private let connection: SpeechHelperConnection
    private let id: UInt64?

    init(connection: SpeechHelperConnection, id: UInt64?) {
        self.connection = connection
        self.id = id
    }

    func cancel() {
        if let id { connection.cancel(id) }
    }
}

/// The loop-local table behind `SpeechHelperConnection.on`: one connection per helper a loop talks
/// to (one, in practice).
private final class SpeechHelperConnections {
    private var byPath: [String: SpeechHelperConnection] = [:]

    func connection(_ loop: EventLoop, _ status: SpeechHelperStatus) -> SpeechHelperConnection {
        if let existing = byPath[status.socketPath] { return existing }
        let made = SpeechHelperConnection(loop: loop, status: status)
        byPath[status.socketPath] = made
        return made
    }
}
