import Loop
import Media

/// One loop's share of the SIP port over UDP (RFC 3261 section 18): every loop binds the same port
/// with SO_REUSEPORT, and the kernel hands each sender's datagrams to one loop by a hash of the
/// addresses, the same one each time, so a caller's retransmissions, ACK and BYE reach the loop
/// that holds its call. What is read goes to the loop's `SIPUserAgent`.
final class SIPSignallingPort: DatagramSocket {
    private let agent: SIPUserAgent

    static func open(on loop: EventLoop, at address: SocketAddress, agent: SIPUserAgent) throws(SystemError) -> SIPSignallingPort {
        let fd = try Sys.datagramSocket(family: address.family)
        do throws(SystemError) {
            try Sys.bindDatagram(fd, to: address, shared: true)
        } catch {
            Sys.close(fd)
            throw error
        }
        let port = try SIPSignallingPort(loop: loop, fd: fd, agent: agent)
        agent.attach(port)
        return port
    }

    private init(loop: EventLoop, fd: Int32, agent: SIPUserAgent) throws(SystemError) {
        self.agent = agent
        // Bounded per pass, so that a flood of INVITEs cannot hold the loop from its calls' media.
        try super.init(loop: loop, fd: fd, perPass: 128)
    }

    override func received(_ datagram: UnsafeRawBufferPointer, from sender: SocketAddress) {
        guard let from = TransportAddress(sender) else { return }
        agent.received(datagram, from: from)
    }

    func send(_ bytes: [UInt8], to peer: TransportAddress) {
        guard let destination = peer.socketAddress else { return }
        _ = bytes.withUnsafeBytes { try? send($0, to: destination) }
    }

    /// The server is stopping: the calls end with a BYE each, then the port closes.
    override func loopStopped() {
        agent.stopping()
        closeSocket()
    }
}
