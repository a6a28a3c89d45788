import Loop
import Media
import SIP
import TLS

/// Where a SIP message came from and how to answer it (RFC 3261 section 18.2.2): over UDP to the
/// source address (RFC 3581), or over TCP on the connection it came on.
struct SIPPeer {
    let address: TransportAddress
    /// The TCP connection, for a message that came on one.
    let connection: SIPStreamConnection?

    static func udp(_ address: TransportAddress) -> SIPPeer { SIPPeer(address: address, connection: nil) }

    /// TCP or TLS: the transaction machines neither retransmit nor wait out timer J or I.
    var isReliable: Bool { connection != nil }
    var transport: String { connection.map { $0.isTLS ? "TLS" : "TCP" } ?? "UDP" }
}

/// One loop's share of SIP's TCP port, or its TLS port (RFC 3261 sections 18.3 and 26.2.1): each
/// loop listens on it with SO_REUSEPORT, as the HTTP port's loops do, and accepts what the kernel
/// gives it.
final class SIPStreamListener: LoopRegistrant {
    let loop: EventLoop
    let fd: Int32
    private var registration: Registration?
    private let agent: SIPUserAgent
    /// Set for the TLS port: each connection's session is made from it.
    private var tls: TLSContext?

    static func open(on loop: EventLoop, at address: SocketAddress, agent: SIPUserAgent, tls: TLSContext? = nil) throws(SystemError) -> SIPStreamListener {
        let fd = try Sys.streamSocket(family: address.family)
        do throws(SystemError) {
            try Sys.listen(fd, on: address)
            return try loop.register(fd, [.readable, .edge]) { registration in
                let listener = SIPStreamListener(loop: loop, fd: fd, agent: agent)
                listener.registration = registration
                listener.tls = tls
                return listener
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
        // Bounded per pass, as the UDP port is: a connect flood waits for the next pass.
        for _ in 0..<64 {
            let accepted: Int32?
            do throws(SystemError) { accepted = try Sys.accept(fd) } catch { return }
            guard let client = accepted else { return }
            guard let peer = (try? Sys.peerAddress(client)).flatMap(TransportAddress.init) else {
                Sys.close(client)
                continue
            }
            guard agent.settings.allows(peer), agent.connections < SIPStreamConnection.maxPerLoop else {
                // Not a caller we take: the connection is closed before anything is read.
                agent.metrics.refused.add(1, .sourceNotAllowed)
                Sys.close(client)
                continue
            }
            let session: TLSStream?
            do throws(TLSError) { session = try tls.map { context throws(TLSError) in try TLSStream(context: context, fd: client) } } catch {
                Sys.close(client)
                continue
            }
            do throws(SystemError) {
                _ = try loop.register(client, [.readable, .writable, .edge]) { registration in
                    SIPStreamConnection(loop: loop, fd: client, registration: registration, peer: peer, agent: agent, tls: session)
                }
            } catch {
                Sys.close(client)
            }
        }
        if let registration { loop.readAgain(registration) }
    }

    override func loopStopped() {
        if let registration { loop.deregister(registration) }
        registration = nil
        Sys.close(fd)
    }
}

/// One TCP (or TLS) connection of SIP: bytes framed into messages by Content-Length
/// (`SIPStreamFramer`), each handed to the loop's agent; what the agent sends on it queued while
/// the socket is full, within a cap (a peer that does not read is dropped). Closed after
/// `idleSeconds` with no message, or when the peer closes or sends what cannot be framed.
final class SIPStreamConnection: LoopRegistrant {
    let loop: EventLoop
    let fd: Int32
    let peer: TransportAddress
    private var registration: Registration?
    private let agent: SIPUserAgent
    private var framer = SIPStreamFramer()
    private var pending: [UInt8] = []
    private var idle: ScheduledTask?
    private(set) var closed = false
    private let tls: TLSStream?
    var isTLS: Bool { tls != nil }

    static let maxPerLoop = 2_000
    static let maxPendingBytes = 256 * 1024
    static let idleSeconds = 600.0

    init(loop: EventLoop, fd: Int32, registration: Registration, peer: TransportAddress, agent: SIPUserAgent, tls: TLSStream? = nil) {
        self.tls = tls
        self.loop = loop
        self.fd = fd
        self.registration = registration
        self.peer = peer
        self.agent = agent
        super.init()
        agent.connections += 1
        rearm()
    }

    private func rearm() {
        idle?.cancel()
        idle = loop.schedule(after: Self.idleSeconds) { [weak self] in self?.close() }
    }

    /// Moves a TLS handshake on; false while it is not done (or it failed, and the connection closed).
    private func handshaken() -> Bool {
        guard let tls, !tls.isEstablished else { return true }
        switch tls.handshake() {
        case .transferred: return true
        case .wantRead, .wantWrite: return false
        case .closed, .failed:
            close()
            return false
        }
    }

    override func readable(hungUp: Bool) {
        guard handshaken() else { return }
        let buffer = UnsafeMutableRawBufferPointer(rebasing: loop.readBuffer[EventLoop.readHeadroom...])
        for _ in 0..<16 {
            let result: Sys.IOResult
            if let tls {
                switch tls.read(into: buffer) {
                case .transferred(let count): result = .transferred(count)
                case .wantRead, .wantWrite: result = .wouldBlock
                case .closed, .failed: result = .endOfFile
                }
            } else {
                do throws(SystemError) { result = try Sys.read(fd, into: buffer) } catch { return close() }
            }
            switch result {
            case .transferred(let count):
                framer.append(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
                guard deliver() else { return }
            case .wouldBlock:
                return
            case .endOfFile:
                return close()
            }
        }
        if let registration { loop.readAgain(registration) }
    }

    /// Every whole message framed so far, to the agent; false when the stream cannot go on.
    private func deliver() -> Bool {
        while !closed {
            let message: SIPMessage?
            do throws(SIPParseError) { message = try framer.next() } catch {
                // A stream that cannot be framed cannot be resynchronised (section 18.3): it ends.
                agent.metrics.messagesDropped.add(1, .malformed)
                close()
                return false
            }
            guard let message else { return true }
            rearm()
            agent.received(message, from: SIPPeer(address: peer, connection: self))
        }
        return false
    }

    func send(_ bytes: [UInt8]) {
        guard !closed else { return }
        guard pending.isEmpty else { return queue(bytes[...]) }
        guard let written = write(bytes) else { return close() }
        if written < bytes.count { queue(bytes[written...]) }
    }

    private func queue(_ bytes: ArraySlice<UInt8>) {
        guard pending.count + bytes.count <= Self.maxPendingBytes else { return close() }
        pending += bytes
        if let registration { loop.modify(registration, fd: fd, [.readable, .writable, .edge]) }
    }

    override func writable() {
        guard handshaken() else { return }
        if let tls, tls.isEstablished, pending.isEmpty { return readable(hungUp: false) }
        guard !pending.isEmpty else { return }
        guard let written = write(pending) else { return close() }
        pending.removeFirst(written)
        if pending.isEmpty, let registration { loop.modify(registration, fd: fd, [.readable, .edge]) }
    }

    /// What of `bytes` the socket took now; nil when the connection failed.
    private func write(_ bytes: [UInt8]) -> Int? {
        if let tls {
            guard tls.isEstablished else { return 0 }
            return bytes.withUnsafeBytes { raw -> Int? in
                switch tls.write(raw) {
                case .transferred(let count): return count
                case .wantRead, .wantWrite: return 0
                case .closed, .failed: return nil
                }
            }
        }
        return bytes.withUnsafeBytes { raw -> Int? in
            do throws(SystemError) {
                switch try Sys.write(fd, raw) {
                case .transferred(let count): return count
                case .wouldBlock, .endOfFile: return 0
                }
            } catch {
                return nil
            }
        }
    }

    func close() {
        guard !closed else { return }
        closed = true
        idle?.cancel()
        idle = nil
        agent.connections -= 1
        tls?.shutdown()
        if let registration { loop.deregister(registration) }
        registration = nil
        Sys.close(fd)
    }

    override func loopStopped() { close() }
}
