/// Starting and ending an association: the four-way handshake (RFC 9260 section 5) and the
/// SHUTDOWN sequence (section 9.2).
extension SCTPAssociation {
    /// The chunk types this endpoint takes beyond RFC 9260's: RE-CONFIG (RFC 6525 section 5.1)
    /// and FORWARD TSN (RFC 3758), both of which browsers use.
    static let supportedExtensions: [UInt8] = [SCTPChunk.ChunkType.reconfig, SCTPChunk.ChunkType.forwardTSN]

    private var ownInit: SCTPInitChunk {
        SCTPInitChunk(
            initiateTag: localTag, advertisedWindow: UInt32(clamping: configuration.receiveWindowBytes),
            outboundStreams: configuration.streams, inboundStreams: configuration.streams, initialTSN: localInitialTSN,
            parameters: [
                SCTPParameter(type: SCTPParameter.supportedExtensions, value: Self.supportedExtensions),
                SCTPParameter(type: SCTPParameter.forwardTSNSupported, value: []),
            ])
    }

    /// The active side: sends INIT (section 5.1 A) and waits in COOKIE-WAIT.
    mutating func connect(now: UInt64) -> [Action] {
        guard state == .closed else { return [] }
        let bytes = packet([.initiate(ownInit)], tag: 0)
        state = .cookieWait
        handshake = (bytes, now &+ rto.value, 0)
        return [.send(bytes)]
    }

    /// An INIT, in any state (section 5.1 B, 5.2.1, 5.2.2): answered with an INIT ACK whose
    /// cookie holds all that is needed later, so nothing here changes. The same tag and TSN are
    /// offered every time, so a collision or a repeated INIT leads to the same association.
    mutating func handleInit(_ initiate: SCTPInitChunk, now: UInt64, into actions: inout [Action]) {
        // Section 3.3.2: a zero tag is silently discarded; zero streams either way cannot carry data.
        guard state != .ended, initiate.initiateTag != 0, initiate.outboundStreams != 0, initiate.inboundStreams != 0 else { return }
        let cookie = SCTPStateCookie(
            createdAt: now, peerTag: initiate.initiateTag, peerInitialTSN: initiate.initialTSN,
            peerWindow: initiate.advertisedWindow, peerOutboundStreams: initiate.outboundStreams,
            peerInboundStreams: initiate.inboundStreams, localTag: localTag, localInitialTSN: localInitialTSN,
            peerSupportsForwardTSN: initiate.supportsForwardTSN, peerSupportsReconfig: initiate.supportsReconfig)
        var ack = ownInit
        ack.parameters.insert(SCTPParameter(type: SCTPParameter.stateCookie, value: cookie.sealed(secret: cookieSecret)), at: 0)
        // Section 3.2.1: parameters the upper bits say to report go back in the INIT ACK (a
        // few short ones: the report is a courtesy, and the INIT ACK must stay one packet).
        for unknown in initiate.unrecognizedParametersToReport().prefix(4) where unknown.value.count <= 128 {
            ack.parameters.append(SCTPParameter(type: SCTPParameter.unrecognizedParameter, value: unknown.tlvBytes))
        }
        actions.append(.send(packet([.initiateAck(ack)], tag: initiate.initiateTag)))
    }

    /// An INIT ACK in COOKIE-WAIT (section 5.1 C): the cookie goes back in a COOKIE ECHO,
    /// with an ERROR for parameters to report (section 3.2.1).
    mutating func handleInitAck(_ ack: SCTPInitChunk, now: UInt64, into actions: inout [Action]) {
        guard state == .cookieWait, ack.initiateTag != 0, ack.outboundStreams != 0, ack.inboundStreams != 0,
            let cookie = ack.stateCookie
        else { return }
        adopt(peerTag: ack.initiateTag, peerInitialTSN: ack.initialTSN, peerWindow: ack.advertisedWindow,
              peerOutbound: ack.outboundStreams, peerInbound: ack.inboundStreams)
        var chunks: [SCTPChunk] = [.cookieEcho(cookie: cookie)]
        let report = ack.unrecognizedParametersToReport().prefix(4).filter { $0.value.count <= 128 }
        if !report.isEmpty {
            chunks.append(.error(causes: report.map { SCTPErrorCause(code: SCTPErrorCause.unrecognizedParameters, info: $0.tlvBytes) }))
        }
        let bytes = packet(chunks)
        state = .cookieEchoed
        rto = SCTPRetransmissionTimeout(initial: configuration.rtoInitial, minimum: configuration.rtoMin, maximum: configuration.rtoMax)
        handshake = (bytes, now &+ rto.value, 0)
        actions.append(.send(bytes))
    }

    /// A COOKIE ECHO (section 5.1 D, 5.2.4): a good cookie of ours makes the association; one
    /// for the association already made (both tags match) is only acknowledged again.
    mutating func handleCookieEcho(_ bytes: [UInt8], packetTag: UInt32, now: UInt64, into actions: inout [Action]) {
        guard packetTag == localTag,
            let cookie = try? SCTPStateCookie(opening: bytes, secret: cookieSecret, now: now, lifetime: configuration.cookieLifetime),
            cookie.localTag == localTag, cookie.localInitialTSN == localInitialTSN
        else { return }
        switch state {
        case .closed, .cookieWait, .cookieEchoed:
            adopt(peerTag: cookie.peerTag, peerInitialTSN: cookie.peerInitialTSN, peerWindow: cookie.peerWindow,
                  peerOutbound: cookie.peerOutboundStreams, peerInbound: cookie.peerInboundStreams)
            control.append(.cookieAck)
            establish(now: now, into: &actions)
        case .established, .shutdownPending, .shutdownSent, .shutdownReceived, .shutdownAckSent:
            // Case D: our COOKIE ACK was lost. A cookie with another peer tag would be the peer
            // restarting (case A), which WebRTC's peers do not do; it is dropped.
            if cookie.peerTag == peerTag { control.append(.cookieAck) }
        case .ended:
            break
        }
    }

    mutating func handleCookieAck(now: UInt64, into actions: inout [Action]) {
        guard state == .cookieEchoed else { return }
        establish(now: now, into: &actions)
    }

    /// Takes the peer's half of the parameters (section 5.1): its tag, its first TSN and window,
    /// and the streams each way (the fewer of what one side offers and the other accepts).
    private mutating func adopt(peerTag: UInt32, peerInitialTSN: UInt32, peerWindow: UInt32, peerOutbound: UInt16, peerInbound: UInt16) {
        self.peerTag = peerTag
        outboundStreams = min(configuration.streams, peerInbound)
        inboundStreams = min(configuration.streams, peerOutbound)
        receiver = SCTPReceiver(peerInitialTSN: peerInitialTSN, capacity: configuration.receiveWindowBytes, maxMessageBytes: configuration.maxIncomingMessageBytes)
        sender = SCTPSender(initialTSN: localInitialTSN, peerWindow: peerWindow, mtu: configuration.maxPacketBytes, capacity: configuration.sendBufferBytes)
        // RFC 6525 section 5.1: each side numbers its requests from its initial TSN.
        streamReset = SCTPStreamResetState(localRequestSequence: localInitialTSN, peerRequestSequence: peerInitialTSN)
    }

    private mutating func establish(now: UInt64, into actions: inout [Action]) {
        state = .established
        handshake = nil
        errorCount = 0
        if let interval = configuration.heartbeatInterval { heartbeatDue = now &+ interval }
        actions.append(.established)
    }

    // MARK: - Shutdown

    /// Starts a graceful close (section 9.2): what is queued is still delivered, then SHUTDOWN.
    mutating func shutdown(now: UInt64) -> [Action] {
        var actions: [Action] = []
        switch state {
        case .established:
            state = .shutdownPending
            flush(now: now, into: &actions)
        case .closed, .cookieWait, .cookieEchoed:
            end(.closed(.shutdown), into: &actions)
        default:
            break
        }
        return actions
    }

    /// Ends the association at once with an ABORT (section 9.1).
    mutating func abort(now: UInt64) -> [Action] {
        guard state != .ended else { return [] }
        var actions: [Action] = []
        if state != .closed && state != .cookieWait {
            actions.append(.send(packet([.abort(reflected: false, causes: [SCTPErrorCause(code: SCTPErrorCause.userInitiatedAbort)])])))
        }
        end(.closed(.abortedLocally), into: &actions)
        return actions
    }

    /// Moves the shutdown on once nothing of ours is outstanding: SHUTDOWN from
    /// SHUTDOWN-PENDING, SHUTDOWN ACK from SHUTDOWN-RECEIVED.
    mutating func progressShutdown(now: UInt64, into actions: inout [Action]) {
        guard sender.isIdle else { return }
        let chunk: SCTPChunk
        switch state {
        case .shutdownPending:
            state = .shutdownSent
            chunk = .shutdown(cumulativeTSN: receiver.cumulativeTSN)
        case .shutdownReceived:
            state = .shutdownAckSent
            chunk = .shutdownAck
        default:
            return
        }
        t3Deadline = nil
        heartbeatDue = nil
        shutdownTimer = (chunk, now &+ rto.value)
        actions.append(.send(packet([chunk])))
    }

    /// A SHUTDOWN (section 9.2): its cumulative TSN acknowledges like a SACK's; once our data is
    /// all acknowledged, SHUTDOWN ACK.
    mutating func handleShutdown(cumulativeTSN: UInt32, now: UInt64, into actions: inout [Action]) {
        switch state {
        case .established, .shutdownPending, .shutdownReceived:
            let sack = SCTPSackChunk(cumulativeTSN: cumulativeTSN, advertisedWindow: UInt32(clamping: sender.peerWindow))
            _ = sender.acknowledge(sack, now: now)
            if !sender.hasOutstanding { t3Deadline = nil }
            state = .shutdownReceived
        case .shutdownSent:
            // Both sides shut down at once: answer with SHUTDOWN ACK.
            state = .shutdownReceived
        default:
            break
        }
    }

    mutating func handleShutdownAck(into actions: inout [Action]) {
        guard state == .shutdownSent || state == .shutdownAckSent else { return }
        actions.append(.send(packet([.shutdownComplete(reflected: false)])))
        end(.closed(.shutdown), into: &actions)
    }
}
