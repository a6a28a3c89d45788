import Loop
#if canImport(Glibc)
import Glibc
#endif

/// A loop's Unix socket to the speech helper, registered with the loop: frames out as they are
/// sent (a write each: the socket is local and its buffer rarely full), frames in as they arrive,
/// to its owner; a socket that fails or ends tells its owner once, and is closed.
final class SpeechHelperSocket: LoopRegistrant {
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
    static func open(_ path: String, generation: Int, loop: EventLoop, owner: SpeechHelperConnection) -> SpeechHelperSocket? {
        guard let address = SocketAddress.unix(path: path), let fd = try? Sys.streamSocket(family: AF_UNIX) else { return nil }
        do {
            guard try Sys.connect(fd, to: address) else {
                Sys.close(fd)
                return nil
            }
            return try loop.register(fd, [.readable, .writable, .edge]) { registration in
                SpeechHelperSocket(fd: fd, generation: generation, registration: registration, loop: loop, owner: owner)
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
        guard !isClosed else { return }
        // The loop's one read loop (`readUntilDrained`), as the connections and upstreams read.
        var source = SocketSource(fd: fd)
        var malformed: String?
        let outcome = loop.readUntilDrained(from: &source, hungUp: hungUp) { bytes in
            do {
                for frame in try reader.read(UnsafeRawBufferPointer(bytes)) { owner?.received(frame) }
            } catch {
                malformed = "the speech helper sent \(error)"
                return .stop
            }
            return isClosed ? .stop : .readOn
        }
        if let malformed { return lose(malformed) }
        switch outcome {
        case .endOfFile: lose("the speech helper closed the connection")
        case .failed(let error): lose("\(error)")
        case .drained, .stopped, .budgetSpent: break
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
