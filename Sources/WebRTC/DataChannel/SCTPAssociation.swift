import Loop
import TLS

/// One SCTP association (RFC 9260) over DTLS (RFC 8261), as a value: packets (DTLS plaintext)
/// and the time go in; packets to send, delivered messages and the association's fate come out.
/// No socket, clock or thread inside; `tick(now:)` runs the timers, `nextDeadline` says when.
///
/// Either side may start it: a browser sends INIT, so the passive side is the one Parley uses
/// (answering with a signed State Cookie and keeping no state until the COOKIE ECHO, section
/// 5.1.3); `connect(now:)` starts the active side. Times are nanoseconds on any monotonic clock.
package struct SCTPAssociation {
    package struct Configuration: Sendable {
        /// WebRTC uses port 5000 at both ends unless SDP's a=sctp-port says otherwise (RFC 8841).
        var localPort: UInt16 = 5000
        var remotePort: UInt16 = 5000
        /// The largest SCTP packet sent: what fits in one DTLS record in one UDP datagram without
        /// IP fragmentation on ordinary paths (RFC 8261 section 5).
        package var maxPacketBytes = 1200
        /// What may be held of incoming data (advertised as a_rwnd).
        var receiveWindowBytes = 1 << 20
        /// The largest message accepted (our a=max-message-size, RFC 8841 section 6).
        var maxIncomingMessageBytes = 256 * 1024
        /// The largest message sent (the peer's a=max-message-size).
        var maxOutgoingMessageBytes = 256 * 1024
        /// What may be held of outgoing data until the peer acknowledges it.
        var sendBufferBytes = 1 << 20
        /// Streams offered each way; WebRTC's stacks offer the most there can be.
        var streams: UInt16 = 65535
        /// RTO.Initial, RTO.Min and RTO.Max (section 16). WebRTC's stacks go below RFC 9260's
        /// 1 s RTO.Min (dcsctp uses 400 ms): a lost event on a live call should not wait a second.
        var rtoInitial: UInt64 = 1_000_000_000
        var rtoMin: UInt64 = 400_000_000
        var rtoMax: UInt64 = 60_000_000_000
        /// Association.Max.Retrans and Max.Init.Retransmits (section 16).
        var maxRetransmissions = 10
        var maxInitRetransmissions = 8
        /// Valid.Cookie.Life (section 16).
        var cookieLifetime: UInt64 = 60_000_000_000
        /// The delayed SACK's longest wait (section 6.2: at most 500 ms, 200 ms recommended).
        var sackDelay: UInt64 = 200_000_000
        /// HB.interval (section 8.3); nil sends no heartbeats (they are still answered).
        var heartbeatInterval: UInt64? = 30_000_000_000

        package init() {}
    }

    package enum Action: Equatable, Sendable {
        case send([UInt8])
        case deliver(stream: UInt16, ppid: UInt32, message: [UInt8])
        case established
        /// The peer reset these outgoing streams of its own (RFC 6525), which in WebRTC closes
        /// their data channels (RFC 8831 section 6.7). Empty: every stream.
        case incomingStreamsReset([UInt16])
        /// Our request to reset these outgoing streams was performed.
        case outgoingStreamsReset([UInt16])
        case closed(SCTPClosure)
        case failed(SCTPFailure)
    }

    enum State: Equatable, Sendable {
        case closed, cookieWait, cookieEchoed, established
        case shutdownPending, shutdownSent, shutdownReceived, shutdownAckSent
        /// Closed for good: nothing more goes in or out.
        case ended
    }

    let configuration: Configuration
    let localTag: UInt32
    let localInitialTSN: UInt32
    let cookieSecret: [UInt8]
    var state: State = .closed
    var peerTag: UInt32 = 0
    var outboundStreams: UInt16 = 0
    var inboundStreams: UInt16 = 0
    var receiver: SCTPReceiver
    var sender: SCTPSender
    var rto: SCTPRetransmissionTimeout
    /// The association's error counter (section 8.1), cleared by every sign of life.
    var errorCount = 0

    /// Chunks waiting for the next packet, ahead of any SACK and DATA (section 6.10 orders
    /// control chunks first).
    var control: [SCTPChunk] = []
    var heapBytes: Int { receiver.heapBytes + sender.heapBytes + HeapSize.of(cookieSecret) + HeapSize.of(control) }
    var sackNow = false
    var sackDeadline: UInt64?
    var dataPacketsSinceSack = 0

    /// T1-init: the INIT or COOKIE ECHO packet to send again, and how often it has been.
    var handshake: (packet: [UInt8], deadline: UInt64, retransmissions: Int)?
    var t3Deadline: UInt64?
    /// T2-shutdown: the SHUTDOWN or SHUTDOWN ACK to send again.
    var shutdownTimer: (chunk: SCTPChunk, deadline: UInt64)?
    var heartbeatDue: UInt64?
    var heartbeatSent: (info: [UInt8], at: UInt64)?
    var heartbeatCounter: UInt64 = 0

    var streamReset = SCTPStreamResetState()

    /// A passive or active association with fresh random tags, TSN and cookie key.
    package init(configuration: Configuration = Configuration()) {
        let random = OpenSSL.randomBytes(40)
        var reader = SCTPReader(random)
        let tag = (try? reader.u32()) ?? 1
        let tsn = (try? reader.u32()) ?? 0
        self.init(configuration: configuration, localTag: tag == 0 ? 1 : tag, initialTSN: tsn, cookieSecret: Array(random[8...]))
    }

    /// An association with given tag, TSN and cookie key: for tests that need to be repeatable.
    init(configuration: Configuration, localTag: UInt32, initialTSN: UInt32, cookieSecret: [UInt8]) {
        self.configuration = configuration
        self.localTag = localTag
        localInitialTSN = initialTSN
        self.cookieSecret = cookieSecret
        receiver = SCTPReceiver(peerInitialTSN: 0, capacity: configuration.receiveWindowBytes, maxMessageBytes: configuration.maxIncomingMessageBytes)
        sender = SCTPSender(initialTSN: initialTSN, peerWindow: 0, mtu: configuration.maxPacketBytes, capacity: configuration.sendBufferBytes)
        rto = SCTPRetransmissionTimeout(initial: configuration.rtoInitial, minimum: configuration.rtoMin, maximum: configuration.rtoMax)
        streamReset = SCTPStreamResetState(localRequestSequence: initialTSN, peerRequestSequence: 0)
    }

    var isEstablished: Bool { state == .established }

    /// The earliest time `tick` has something to do, if any.
    var nextDeadline: UInt64? {
        [handshake?.deadline, t3Deadline, shutdownTimer?.deadline, sackDeadline, heartbeatDue, streamReset.deadline]
            .compactMap { $0 }.min()
    }

    // MARK: - Sending

    /// Queues a message on a stream and sends what the windows allow.
    mutating func send(_ message: [UInt8], stream: UInt16, ppid: UInt32, ordered: Bool = true, now: UInt64) throws(SCTPSendError) -> [Action] {
        guard state == .established else { throw .notEstablished }
        guard message.count <= configuration.maxOutgoingMessageBytes else { throw .messageTooLarge(message.count) }
        guard !streamReset.isResetting(stream) else { throw .streamResetting(stream) }
        try sender.enqueue(message, stream: stream, ppid: ppid, ordered: ordered)
        var actions: [Action] = []
        flush(now: now, into: &actions)
        return actions
    }

    /// Sends what is waiting: control chunks, a SACK if one is due, and DATA the windows allow,
    /// bundled into packets of at most `maxPacketBytes`.
    mutating func flush(now: UInt64, into actions: inout [Action]) {
        guard state != .ended else { return }
        let budget = configuration.maxPacketBytes - SCTPPacket.headerBytes
        var sentData = false
        var flight = sender.flightSize
        while true {
            var chunks: [SCTPChunk] = []
            var size = 0
            while let first = control.first, chunks.isEmpty || size + first.encodedLength <= budget {
                chunks.append(control.removeFirst())
                size += first.encodedLength
            }
            let canSendData = state == .established || state == .shutdownPending || state == .shutdownReceived
            // A SACK goes when due, and rides along with any DATA leaving anyway (section 6.2);
            // one that does not fit after the control chunks goes in the next packet (a fuzzed
            // run of RE-CONFIG requests and an ERROR filled one to 1,160 bytes, and the SACK made
            // it 1,204 of a 1,200-byte path).
            if sackNow || (sackDeadline != nil && canSendData && sender.hasUnsent) {
                let sack = SCTPChunk.sack(receiver.sack())
                if chunks.isEmpty || size + sack.encodedLength <= budget {
                    chunks.append(sack)
                    size += sack.encodedLength
                    sackNow = false
                    sackDeadline = nil
                    dataPacketsSinceSack = 0
                }
            }
            if canSendData {
                while let chunk = sender.next(room: budget - size, now: now, flight: &flight) {
                    chunks.append(.data(chunk))
                    size += SCTPDataChunk.headerBytes + (chunk.userData.count + 3) & ~3
                    sentData = true
                }
            }
            guard !chunks.isEmpty else { break }
            actions.append(.send(packet(chunks)))
        }
        // R1 (section 6.3.2): T3 runs whenever DATA is outstanding.
        if sentData && t3Deadline == nil { t3Deadline = now &+ rto.value }
        if !sender.hasOutstanding { t3Deadline = nil }
        progressShutdown(now: now, into: &actions)
    }

    func packet(_ chunks: [SCTPChunk], tag: UInt32? = nil) -> [UInt8] {
        SCTPPacket(sourcePort: configuration.localPort, destinationPort: configuration.remotePort, verificationTag: tag ?? peerTag, chunks: chunks).encoded()
    }

    // MARK: - Receiving

    /// Takes one packet, the plaintext of a DTLS record. Packets that do not parse, or whose
    /// verification tag is wrong (section 8.5), are dropped without a word.
    mutating func receive(_ bytes: [UInt8], now: UInt64) -> [Action] {
        guard state != .ended, let packet = try? SCTPPacket(parsing: bytes), packet.destinationPort == configuration.localPort else { return [] }
        var actions: [Action] = []
        // Section 8.5.1: an INIT travels alone with tag 0.
        if packet.chunks.contains(where: { $0.type == SCTPChunk.ChunkType.initiate }) {
            guard packet.chunks.count == 1, packet.verificationTag == 0, case .initiate(let initiate) = packet.chunks[0] else { return [] }
            handleInit(initiate, now: now, into: &actions)
            return actions
        }
        guard acceptsTag(of: packet) else { return [] }

        var dataPackets = false
        var immediate = false
        chunks: for chunk in packet.chunks {
            guard state != .ended else { break }
            switch chunk {
            case .data(let data):
                dataPackets = true
                immediate = immediate || data.immediate
                handleData(data, now: now, into: &actions)
            case .initiate:
                break
            case .initiateAck(let ack):
                handleInitAck(ack, now: now, into: &actions)
            case .sack(let sack):
                handleSack(sack, now: now)
            case .heartbeat(let info):
                // The info is the peer's own and comes back as it was (section 8.3); a huge one
                // is not echoed into a packet past our size.
                if info.count <= configuration.maxPacketBytes - 32 { control.append(.heartbeatAck(info: info)) }
            case .heartbeatAck(let info):
                handleHeartbeatAck(info, now: now)
            case .abort(_, let causes):
                end(.closed(.abortedByPeer(causes)), into: &actions)
            case .shutdown(let cumulativeTSN):
                handleShutdown(cumulativeTSN: cumulativeTSN, now: now, into: &actions)
            case .shutdownAck:
                handleShutdownAck(into: &actions)
            case .shutdownComplete:
                if state == .shutdownAckSent { end(.closed(.shutdown), into: &actions) }
            case .error:
                // Nothing here depends on an ERROR's causes: a stale cookie or an unrecognized
                // chunk reported back leaves the timers to decide.
                break
            case .cookieEcho(let cookie):
                handleCookieEcho(cookie, packetTag: packet.verificationTag, now: now, into: &actions)
            case .cookieAck:
                handleCookieAck(now: now, into: &actions)
            case .forwardTSN(let forward):
                guard receivesData else { break }
                var deliveries: [SCTPReceiver.Message] = []
                receiver.forward(forward, into: &deliveries)
                actions += deliveries.map { .deliver(stream: $0.stream, ppid: $0.ppid, message: $0.bytes) }
                sackNow = true
            case .reconfig(let parameters):
                handleReconfig(parameters, now: now, into: &actions)
            case .unknown(let type, _, let value):
                // Section 3.2: the upper two bits say whether to report the chunk (01, 11) and
                // whether to go on with the rest of the packet (10, 11).
                if type & 0x40 != 0 {
                    var writer = SCTPWriter()
                    SCTPChunk.unknown(type: type, flags: 0, value: value).encode(into: &writer)
                    control.append(.error(causes: [SCTPErrorCause(code: SCTPErrorCause.unrecognizedChunkType, info: Array(writer.bytes.prefix(1024)))]))
                }
                if type & 0x80 == 0 { break chunks }
            }
        }
        if dataPackets && state != .ended { scheduleSack(immediate: immediate, now: now) }
        flush(now: now, into: &actions)
        return actions
    }

    /// Section 8.5: a packet must carry our tag, except an ABORT or SHUTDOWN COMPLETE with the T
    /// bit (which carries the peer's) and a COOKIE ECHO (checked against its cookie).
    private func acceptsTag(of packet: SCTPPacket) -> Bool {
        switch packet.chunks[0] {
        case .abort(let reflected, _), .shutdownComplete(let reflected):
            guard state != .closed else { return false }
            return reflected ? packet.verificationTag == peerTag : packet.verificationTag == localTag
        case .cookieEcho:
            return true
        default:
            return packet.verificationTag == localTag && state != .closed
        }
    }

    var receivesData: Bool { state == .established || state == .shutdownPending || state == .shutdownSent }

    private mutating func handleData(_ data: SCTPDataChunk, now: UInt64, into actions: inout [Action]) {
        guard receivesData else { return }
        guard !data.userData.isEmpty else {
            // Section 6.2: a DATA chunk with no user data is answered with ABORT.
            abort(SCTPErrorCause(code: SCTPErrorCause.noUserData, info: withUnsafeBytes(of: data.tsn.bigEndian, Array.init)), into: &actions)
            return
        }
        let valid = data.stream < inboundStreams
        var deliveries: [SCTPReceiver.Message] = []
        switch receiver.receive(data, hold: valid, into: &deliveries) {
        case .messageTooLarge:
            abort(.violation("a message over \(configuration.maxIncomingMessageBytes) bytes"), into: &actions)
            return
        case .accepted where !valid:
            // Section 6.5: acknowledged, not delivered, and reported.
            var info = SCTPWriter()
            info.u16(data.stream)
            info.u16(0)
            control.append(.error(causes: [SCTPErrorCause(code: SCTPErrorCause.invalidStreamIdentifier, info: info.bytes)]))
        case .accepted, .duplicate, .dropped:
            break
        }
        actions += deliveries.map { .deliver(stream: $0.stream, ppid: $0.ppid, message: $0.bytes) }
        performDeferredReset(into: &actions)
    }

    /// Section 6.2: a SACK at once for a gap, a duplicate or the I bit, else for every second
    /// packet with DATA, else within `sackDelay`; in SHUTDOWN-SENT each such packet is answered
    /// with a SHUTDOWN as well (section 9.2).
    private mutating func scheduleSack(immediate: Bool, now: UInt64) {
        dataPacketsSinceSack += 1
        if receiver.hasGaps || receiver.hasDuplicates || immediate || dataPacketsSinceSack >= 2 || state == .shutdownSent {
            sackNow = true
        } else if sackDeadline == nil {
            sackDeadline = now &+ configuration.sackDelay
        }
        if state == .shutdownSent {
            control.append(.shutdown(cumulativeTSN: receiver.cumulativeTSN))
            shutdownTimer = (.shutdown(cumulativeTSN: receiver.cumulativeTSN), now &+ rto.value)
        }
    }

    private mutating func handleSack(_ sack: SCTPSackChunk, now: UInt64) {
        guard [.established, .shutdownPending, .shutdownReceived].contains(state) else { return }
        let (outcome, rtt) = sender.acknowledge(sack, now: now)
        if let rtt { rto.measured(rtt) }
        if outcome.cumulativeAdvanced {
            errorCount = 0
            // R3: the earliest outstanding chunk was acknowledged; time the next from now.
            t3Deadline = sender.hasOutstanding ? now &+ rto.value : nil
        }
        if !sender.hasOutstanding { t3Deadline = nil }
    }

    private mutating func handleHeartbeatAck(_ info: [UInt8], now: UInt64) {
        guard let sent = heartbeatSent, sent.info == info else { return }
        heartbeatSent = nil
        errorCount = 0
        rto.measured(now > sent.at ? now - sent.at : 0)
    }

    // MARK: - Timers

    /// Runs the timers due at `now`.
    mutating func tick(now: UInt64) -> [Action] {
        guard state != .ended else { return [] }
        var actions: [Action] = []
        if let timer = handshake, timer.deadline <= now {
            // Section 5.1.6: INIT and COOKIE ECHO go again with the timeout doubled, until
            // Max.Init.Retransmits.
            if timer.retransmissions >= configuration.maxInitRetransmissions {
                end(.failed(.handshakeTimedOut), into: &actions)
                return actions
            }
            rto.backOff()
            handshake = (timer.packet, now &+ rto.value, timer.retransmissions + 1)
            actions.append(.send(timer.packet))
        }
        if let deadline = t3Deadline, deadline <= now {
            // Section 6.3.3: every outstanding chunk is to go again, the timeout doubles.
            t3Deadline = nil
            guard countError(into: &actions) else { return actions }
            rto.backOff()
            sender.retransmissionTimerExpired()
        }
        if let timer = shutdownTimer, timer.deadline <= now {
            guard countError(into: &actions) else { return actions }
            rto.backOff()
            control.append(timer.chunk)
            shutdownTimer = (timer.chunk, now &+ rto.value)
        }
        if let deadline = sackDeadline, deadline <= now { sackNow = true }
        if let due = heartbeatDue, due <= now { heartbeat(now: now, into: &actions) }
        if state == .ended { return actions }
        if let deadline = streamReset.deadline, deadline <= now {
            guard countError(into: &actions) else { return actions }
            rto.backOff()
            resendResetRequest(now: now)
        }
        flush(now: now, into: &actions)
        return actions
    }

    /// Counts a timeout against Association.Max.Retrans (section 8.1); past it the peer is taken
    /// to be unreachable, and the association ends. False when it has.
    private mutating func countError(into actions: inout [Action]) -> Bool {
        errorCount += 1
        guard errorCount > configuration.maxRetransmissions else { return true }
        control = [.abort(reflected: false, causes: [.violation("no answer after \(configuration.maxRetransmissions) retransmissions")])]
        actions.append(.send(packet(control)))
        control = []
        end(.failed(.retransmissionsExhausted), into: &actions)
        return false
    }

    /// Section 8.3: an idle association is probed every HB.interval (plus an RTO); an
    /// unanswered probe counts as an error.
    private mutating func heartbeat(now: UInt64, into actions: inout [Action]) {
        guard state == .established, let interval = configuration.heartbeatInterval else {
            heartbeatDue = nil
            return
        }
        if sender.hasOutstanding {
            heartbeatDue = now &+ interval
            return
        }
        if heartbeatSent != nil { guard countError(into: &actions) else { return } }
        heartbeatCounter &+= 1
        var info = SCTPWriter()
        info.u64(now)
        info.u64(heartbeatCounter)
        heartbeatSent = (info.bytes, now)
        control.append(.heartbeat(info: info.bytes))
        heartbeatDue = now &+ interval &+ rto.value
    }

    /// Sends an ABORT with `cause` and ends the association as failed.
    mutating func abort(_ cause: SCTPErrorCause, into actions: inout [Action]) {
        actions.append(.send(packet([.abort(reflected: false, causes: [cause])])))
        end(.failed(.aborted(cause)), into: &actions)
    }

    mutating func end(_ action: Action, into actions: inout [Action]) {
        state = .ended
        control = []
        handshake = nil
        t3Deadline = nil
        shutdownTimer = nil
        sackDeadline = nil
        heartbeatDue = nil
        streamReset = SCTPStreamResetState()
        actions.append(action)
    }
}

/// How an association closed.
package enum SCTPClosure: Equatable, Sendable, CustomStringConvertible {
    /// The SHUTDOWN sequence completed (section 9.2).
    case shutdown
    case abortedByPeer([SCTPErrorCause])
    /// This side called `abort`.
    case abortedLocally

    package var description: String {
        switch self {
        case .shutdown: "shut down"
        case .abortedByPeer(let causes): causes.isEmpty ? "aborted by the peer" : "aborted by the peer: \(causes.map(\.description).joined(separator: ", "))"
        case .abortedLocally: "aborted"
        }
    }
}

/// How an association failed.
package enum SCTPFailure: Equatable, Sendable, CustomStringConvertible {
    case handshakeTimedOut
    case retransmissionsExhausted
    /// The peer broke the protocol (or a bound); an ABORT with this cause was sent.
    case aborted(SCTPErrorCause)

    package var description: String {
        switch self {
        case .handshakeTimedOut: "no answer to INIT or COOKIE ECHO"
        case .retransmissionsExhausted: "the peer stopped acknowledging"
        case .aborted(let cause): "aborted: \(cause)"
        }
    }
}

extension SCTPChunk {
    /// The chunk's length on the wire, padding included.
    var encodedLength: Int {
        var writer = SCTPWriter()
        encode(into: &writer)
        return writer.bytes.count
    }
}
