import Loop
import Media

/// One loop's share of the SIP port over UDP (RFC 3261 section 18): every loop binds the same port
/// with SO_REUSEPORT, and the kernel hands each sender's datagrams to one loop by a hash of the
/// addresses, the same one each time, so a caller's retransmissions, ACK and BYE reach the loop
/// that holds its call. What is read goes to the loop's `SIPUserAgent`.
final class SIPSignallingPort: LoopRegistrant {
    let loop: EventLoop
    let fd: Int32
    private var registration: Registration?
    private let agent: SIPUserAgent

    static func open(on loop: EventLoop, at address: SocketAddress, agent: SIPUserAgent) throws(SystemError) -> SIPSignallingPort {
        let fd = try Sys.datagramSocket(family: address.family)
        do throws(SystemError) {
            try Sys.bindDatagram(fd, to: address, shared: true)
            return try loop.register(fd, [.readable, .edge]) { registration in
                let port = SIPSignallingPort(loop: loop, fd: fd, agent: agent)
                port.registration = registration
                agent.attach(port)
                return port
            }
        } catch {
            Sys.close(fd)
            throw error
        }
    }

    private init(loop: EventLoop, fd: Int32, agent: SIPUserAgent) {
        self.loop = loop
        self.fd = fd
        self.agent = agent
    }

    override func readable(hungUp: Bool) {
        let buffer = UnsafeMutableRawBufferPointer(rebasing: loop.readBuffer[EventLoop.readHeadroom...])
        var sender = SocketAddress()
        // Bounded per pass, so that a flood of INVITEs cannot hold the loop from its calls' media.
        for _ in 0..<128 {
            let count: Int?
            do throws(SystemError) { count = try Sys.receiveDatagram(fd, into: buffer, from: &sender) } catch { return }
            guard let count else { return }
            guard let from = TransportAddress(sender) else { continue }
            agent.received(UnsafeRawBufferPointer(rebasing: buffer[..<count]), from: from)
        }
        if let registration { loop.readAgain(registration) }
    }

    func send(_ bytes: [UInt8], to peer: TransportAddress) {
        guard let destination = peer.socketAddress else { return }
        _ = bytes.withUnsafeBytes { try? Sys.sendDatagram(fd, $0, to: destination) }
    }

    /// The server is stopping: the calls end with a BYE each, then the port closes.
    override func loopStopped() {
        agent.stopping()
        if let registration { loop.deregister(registration) }
        registration = nil
        Sys.close(fd)
    }
}
