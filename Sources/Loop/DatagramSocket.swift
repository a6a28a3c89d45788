/// A UDP socket its loop watches: its datagrams read in bounded passes, each handed to
/// `received(_:from:)`, and sent one at a time. WebRTC's media port, SIP's signalling port and a
/// SIP call's RTP port are its subclasses: one read loop for every datagram the server takes.
///
/// A pass reads at most `perPass` datagrams, so that a flood on one port cannot hold the loop from
/// the rest; what is left waits for the next pass (the socket is edge-triggered, so it is read
/// again through `EventLoop.readAgain`).
open class DatagramSocket: LoopRegistrant {
    public let loop: EventLoop
    public let fd: Int32
    private let perPass: Int
    private var registration: Registration?
    private var closed = false

    /// Watches `fd`, a bound datagram socket that is this object's from now on (closed here if it
    /// cannot be watched).
    public init(loop: EventLoop, fd: Int32, perPass: Int) throws(SystemError) {
        self.loop = loop
        self.fd = fd
        self.perPass = perPass
        super.init()
        do throws(SystemError) {
            _ = try loop.register(fd, [.readable, .edge]) { registration in
                self.registration = registration
                return self
            }
        } catch {
            closed = true
            Sys.close(fd)
            throw error
        }
    }

    /// One datagram, in the loop's read buffer (valid only during the call).
    open func received(_ datagram: UnsafeRawBufferPointer, from sender: SocketAddress) {}

    public final override func readable(hungUp: Bool) {
        let buffer = UnsafeMutableRawBufferPointer(rebasing: loop.readBuffer[EventLoop.readHeadroom...])
        var sender = SocketAddress()
        for _ in 0..<perPass {
            let count: Int?
            do throws(SystemError) { count = try Sys.receiveDatagram(fd, into: buffer, from: &sender) } catch { return }
            guard let count else { return }
            received(UnsafeRawBufferPointer(rebasing: buffer[..<count]), from: sender)
            if closed { return }
        }
        if let registration { loop.readAgain(registration) }
    }

    /// Sends one datagram: false when the socket's buffer is full (it is dropped, as the network
    /// would drop it).
    public final func send(_ bytes: UnsafeRawBufferPointer, to destination: SocketAddress) throws(SystemError) -> Bool {
        try Sys.sendDatagram(fd, bytes, to: destination)
    }

    /// Stops watching the socket and closes it; again, nothing.
    public final func closeSocket() {
        guard !closed else { return }
        closed = true
        if let registration { loop.deregister(registration) }
        registration = nil
        Sys.close(fd)
    }
}
