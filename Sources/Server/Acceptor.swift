import Loop
#if canImport(Glibc)
import Glibc
#endif

/// One loop's listening socket (SO_REUSEPORT: every loop has its own and the kernel spreads
/// connections among them). Level-triggered: it takes a batch per wake-up and epoll reports the
/// rest next time round.
///
/// At the descriptor limit accept(2) fails with EMFILE while the connection stays pending, which
/// would make the listener report forever (a busy loop). So a spare descriptor is kept: given up to
/// accept the pending connection and close it at once; without a spare, listening pauses for a tick.
final class Acceptor: LoopRegistrant {
    private let fd: Int32
    private let registration: Registration
    private unowned(unsafe) let serving: ServingLoop
    /// The stream port it listens for (`ServingLoop.streamPorts`); nil for the HTTP port.
    private let port: Int?
    private var spareFD: Int32 = -1
    private var paused = false
    private var closed = false

    private init(fd: Int32, registration: Registration, serving: ServingLoop, port: Int?) {
        self.fd = fd
        self.registration = registration
        self.serving = serving
        self.port = port
        spareFD = (try? Sys.openReadOnly("/dev/null")) ?? -1
    }

    static func listen(on fd: Int32, for serving: ServingLoop, port: Int? = nil) throws(SystemError) -> Acceptor {
        try serving.loop.register(fd, .readable) { Acceptor(fd: fd, registration: $0, serving: serving, port: port) }
    }

    override func readable(hungUp: Bool) {
        for _ in 0..<64 {
            let client: Int32
            do {
                guard let accepted = try Sys.accept(fd) else { return }
                client = accepted
            } catch {
                if error.errno == EMFILE || error.errno == ENFILE { refuseOverLimit() }
                return
            }
            if let port { serving.admit(client, streamPort: port) } else { serving.admit(client) }
        }
    }

    private func refuseOverLimit() {
        guard spareFD >= 0 else { return pause() }
        Sys.close(spareFD)
        spareFD = -1
        if let client = try? Sys.accept(fd) {
            Sys.close(client)
            serving.refused(.descriptorLimit)
        }
        spareFD = (try? Sys.openReadOnly("/dev/null")) ?? -1
        if spareFD < 0 { pause() }
    }

    private func pause() {
        guard !paused, !closed else { return }
        paused = true
        serving.loop.pause(fd)
        serving.loop.setDeadline(registration, afterTicks: 1)
        serving.refused(.descriptorLimit)
    }

    /// The pause is over: try again.
    override func deadlinePassed() {
        guard paused, !closed else { return }
        paused = false
        if spareFD < 0 { spareFD = (try? Sys.openReadOnly("/dev/null")) ?? -1 }
        serving.loop.resume(registration, fd: fd, .readable)
    }

    /// Stops listening (a graceful shutdown): the port is left to other processes.
    func close() {
        guard !closed else { return }
        closed = true
        serving.loop.deregister(registration)
        Sys.close(fd)
        if spareFD >= 0 { Sys.close(spareFD) }
        spareFD = -1
    }

    override func loopStopped() { close() }
}
