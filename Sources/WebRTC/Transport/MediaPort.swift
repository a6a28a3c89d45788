import Glibc
import Loop
import Server
import Media

/// What a media port hands a datagram to: one WebRTC call.
protocol MediaPortCall: AnyObject {
    /// A datagram from `from` (its RFC 7983 kind already read from its first byte), in the loop's
    /// shared read buffer: valid only during the call.
    func received(_ datagram: UnsafeRawBufferPointer, kind: PacketKind, from: TransportAddress)
    /// The port is closing (its loop stops, `server`, or a drain reached its bound, `drained`): the
    /// call ends now, telling its peer while it can.
    func portClosing(_ reason: WebRTCCallEnd)
}

/// One UDP socket per event loop, shared by every call that loop answered (ICE-lite's host
/// candidate, RFC 8445 section 2.5): a call's offer is answered with its loop's port, so its media
/// never crosses to another thread. Datagrams are told apart by sender: STUN by its USERNAME's
/// first half (our ufrag, RFC 8445 section 7.2.2, since a new peer's address is not known yet),
/// everything else by the address ICE selected for a call.
final class MediaPort: DatagramSocket {
    /// The address bound (what the answer's candidate names unless a public address is given).
    let local: SocketAddress
    private var byUfrag: [[UInt8]: MediaPortCall] = [:]
    private var byAddress: [TransportAddress: MediaPortCall] = [:]
    private let metrics: WebRTCMetrics
    /// Its calls' 20 ms playout, one tick for all.
    let playout: PlayoutClock

    /// Binds a UDP socket on `host` at the first free port of `ports` (nil: the kernel's choice)
    /// and watches it on `loop`.
    static func open(on loop: EventLoop, host: SocketAddress, ports: ClosedRange<Int>?, metrics: WebRTCMetrics) throws(SystemError) -> MediaPort {
        let (fd, local) = try Sys.boundDatagramSocket(host: host, ports: ports.map(Array.init) ?? [0])
        return try MediaPort(loop: loop, fd: fd, local: local, metrics: metrics)
    }

    private init(loop: EventLoop, fd: Int32, local: SocketAddress, metrics: WebRTCMetrics) throws(SystemError) {
        self.local = local
        self.metrics = metrics
        playout = .on(loop)
        // Bounded per pass so that one flooded port cannot hold the loop.
        try super.init(loop: loop, fd: fd, perPass: 256)
        LoopDrain.on(loop).hold(self)
    }

    /// A call waiting for its peer's checks under our ufrag; false if the ufrag is taken (the
    /// caller makes another: 48 random bits make that rare, never impossible).
    func expect(_ call: MediaPortCall, ufrag: [UInt8]) -> Bool {
        guard byUfrag[ufrag] == nil else { return false }
        byUfrag[ufrag] = call
        return true
    }

    func isExpecting(ufrag: [UInt8]) -> Bool { byUfrag[ufrag] != nil }

    /// ICE selected `address` for `call` (a nomination, or the peer moved): its DTLS, SRTP and
    /// SRTCP come from there now. The old address, if any, no longer reaches it.
    func route(_ address: TransportAddress, to call: MediaPortCall, replacing old: TransportAddress?) {
        if let old, byAddress[old] === call { byAddress[old] = nil }
        byAddress[address] = call
    }

    /// The call has ended: nothing reaches it any more.
    func forget(_ call: MediaPortCall, ufrag: [UInt8], address: TransportAddress?) {
        if byUfrag[ufrag] === call { byUfrag[ufrag] = nil }
        if let address, byAddress[address] === call { byAddress[address] = nil }
    }

    var calls: Int { byUfrag.count }

    /// Sends one datagram; a full socket buffer drops it, as the network would.
    func send(_ bytes: UnsafeRawBufferPointer, to address: TransportAddress) {
        guard let destination = address.socketAddress else { return }
        do throws(SystemError) {
            if try !send(bytes, to: destination) { metrics.dropped(.sendBufferFull) }
        } catch {
            metrics.dropped(.sendFailed)
        }
    }

    override func received(_ datagram: UnsafeRawBufferPointer, from sender: SocketAddress) { dispatch(datagram, from: sender) }

    private func dispatch(_ datagram: UnsafeRawBufferPointer, from sender: SocketAddress) {
        guard let first = datagram.first,
              let address = sender.withHostBytes({ TransportAddress(octets: $0, port: UInt16(sender.port)) }) else {
            return metrics.dropped(.malformed)
        }
        let kind = PacketKind.classify(first)
        switch kind {
        case .drop:
            metrics.dropped(.malformed)
        case .stun:
            // A check names its call; any other STUN (a response, an indication) comes from a
            // peer ICE already chose.
            if let ufrag = STUNMessage.usernamePrefix(datagram), let call = byUfrag[Array(ufrag)] {
                call.received(datagram, kind: kind, from: address)
            } else if let call = byAddress[address] {
                call.received(datagram, kind: kind, from: address)
            } else {
                metrics.dropped(.unknownPeer)
            }
        case .dtls, .rtp:
            guard let call = byAddress[address] else { return metrics.dropped(.unknownPeer) }
            call.received(datagram, kind: kind, from: address)
        }
    }

    /// The server is stopping: every call ends with DTLS's close_notify (so browsers hang up at
    /// once rather than after ICE's 30 s), then the socket closes.
    override func loopStopped() {
        for call in Array(byUfrag.values) { call.portClosing(.server) }
        close()
    }

    func close() { closeSocket() }
}

/// A draining loop waits for its WebRTC calls (`LoopDrain`), and at the drain's bound ends them as
/// a stopping loop does: DTLS's close_notify, so browsers hang up at once.
extension MediaPort: DrainHolder {
    var callsHeld: Int { byUfrag.count }
    func endCallsForDrain() {
        for call in Array(byUfrag.values) { call.portClosing(.drained) }
    }
}
