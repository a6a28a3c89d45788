import Testing
import TestSupport
@testable import WebRTC

struct SCTPAssociationTests {
    static let ms = SCTPLink.millisecond

    static func message(_ index: Int, bytes: Int) -> [UInt8] {
        (0..<bytes).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index) }
    }

    @Test func theActiveAndPassiveSidesEstablish() {
        var link = SCTPLink()
        link.connect()
        #expect(link.client.state == .established)
        #expect(link.server.state == .established)
        #expect(link.clientActions == [.established])
        #expect(link.serverActions == [.established])
    }

    /// Section 5.1.3: the passive side answers INIT from the cookie alone, holding nothing.
    @Test func anInitLeavesThePassiveSideWithoutState() throws {
        var client = SCTPAssociation(configuration: SCTPLink.configuration())
        var server = SCTPAssociation(configuration: SCTPLink.configuration())
        guard case .send(let initBytes) = client.connect(now: 0).first else { Issue.record("no INIT"); return }
        let answer = server.receive(initBytes, now: 0)
        #expect(server.state == .closed)
        guard case .send(let ackBytes) = answer.first, case .initiateAck(let ack) = try SCTPPacket(parsing: ackBytes).chunks.first else {
            Issue.record("no INIT ACK")
            return
        }
        #expect(ack.stateCookie != nil)
        #expect(ack.supportsReconfig && ack.supportsForwardTSN)
    }

    @Test func aForgedOrStaleCookieIsIgnored() throws {
        var client = SCTPAssociation(configuration: SCTPLink.configuration())
        var server = SCTPAssociation(configuration: SCTPLink.configuration())
        guard case .send(let initBytes) = client.connect(now: 0).first, case .send(let ackBytes) = server.receive(initBytes, now: 0).first else {
            Issue.record("no handshake")
            return
        }
        guard case .send(let echoBytes) = client.receive(ackBytes, now: 0).first else { Issue.record("no COOKIE ECHO"); return }
        var forged = try SCTPPacket(parsing: echoBytes)
        if case .cookieEcho(var cookie) = forged.chunks[0] { cookie[5] ^= 1; forged.chunks[0] = .cookieEcho(cookie: cookie) }
        var tampered = server
        #expect(tampered.receive(forged.encoded(), now: 0).isEmpty)
        var late = server
        #expect(late.receive(echoBytes, now: 61_000_000_000).isEmpty)
        let accepted = server.receive(echoBytes, now: 1_000_000)
        #expect(accepted.contains(.established))
    }

    @Test(arguments: [42, 7, 2024] as [UInt64])
    func messagesArriveOnceAndInOrderThroughLossAndReordering(seed: UInt64) throws {
        var link = SCTPLink(seed: seed)
        link.connect()
        link.lossRate = 0.10
        link.jitter = 20 * Self.ms
        var expected: [[UInt8]] = []
        for index in 0..<60 {
            // Every tenth message is large enough for 50 fragments of 1,172 bytes.
            let message = Self.message(index, bytes: index % 10 == 3 ? 50 * 1172 : 20 + index)
            expected.append(message)
            try link.sendFromClient(message)
            if index % 3 == 0 { try link.sendFromServer(Self.message(index, bytes: 300)) }
            link.run(for: 3 * Self.ms)
        }
        link.run(for: 60_000 * Self.ms)
        #expect(link.serverDeliveries.count == expected.count)
        #expect(link.serverDeliveries == expected)
        #expect(link.clientDeliveries == stride(from: 0, to: 60, by: 3).map { Self.message($0, bytes: 300) })
        #expect(link.client.state == .established)
        #expect(link.client.sender.isIdle)
    }

    @Test func unorderedMessagesAllArriveOnce() throws {
        var link = SCTPLink(seed: 7)
        link.connect()
        link.lossRate = 0.10
        link.jitter = 20 * Self.ms
        let messages = (0..<40).map { Self.message($0, bytes: $0 % 8 == 0 ? 5000 : 30) }
        for message in messages { try link.sendFromClient(message, stream: 2, ordered: false) }
        link.run(for: 60_000 * Self.ms)
        #expect(link.serverDeliveries.count == messages.count)
        #expect(Set(link.serverDeliveries) == Set(messages))
    }

    /// Section 6.3.3: with nothing after it to trigger fast retransmit, a lost packet goes again
    /// when T3-rtx expires (RTO.Initial, 1 s, before any measurement).
    @Test func aLostLonePacketIsResentByTheRetransmissionTimer() throws {
        var link = SCTPLink()
        link.connect()
        var dropped = false
        link.drop = { toServer, packet in
            guard toServer, !dropped, packet.chunks.contains(where: { if case .data = $0 { true } else { false } }) else { return false }
            dropped = true
            return true
        }
        let start = link.now
        try link.sendFromClient([1, 2, 3])
        link.run(for: 900 * Self.ms)
        #expect(link.serverDeliveries.isEmpty)
        link.run(for: 200 * Self.ms)
        #expect(link.serverDeliveries == [[1, 2, 3]])
        let sends = link.sentToServer.filter { $0.at >= start && $0.packet.chunks.contains { if case .data = $0 { true } else { false } } }
        #expect(sends.count == 2)
        #expect(sends.count == 2 && sends[1].at - sends[0].at >= 1000 * Self.ms)
    }

    /// Section 7.2.4: three SACKs reporting a TSN missing send it again well before T3 would.
    @Test func aLostPacketAmongManyIsFastRetransmitted() throws {
        var link = SCTPLink()
        link.connect()
        var droppedTSN: UInt32?
        link.drop = { toServer, packet in
            guard toServer, droppedTSN == nil, case .data(let data)? = packet.chunks.last, data.ssn == 2 else { return false }
            droppedTSN = data.tsn
            return true
        }
        let start = link.now
        for index in 0..<10 {
            try link.sendFromClient(Self.message(index, bytes: 1000))
            link.run(for: 2 * Self.ms)
        }
        link.run(for: 300 * Self.ms)
        #expect(link.serverDeliveries.count == 10)
        let resent = link.sentToServer.filter { sent in
            sent.at >= start && sent.packet.chunks.contains { if case .data(let d) = $0 { d.tsn == droppedTSN } else { false } }
        }
        #expect(resent.count == 2)
        #expect(resent.count == 2 && resent[1].at - resent[0].at < 200 * Self.ms)
    }

    /// Section 8.1: past Association.Max.Retrans unanswered timeouts the peer is unreachable.
    @Test func anUnansweringPeerFailsTheAssociationAfterMaxRetransmissions() throws {
        var link = SCTPLink(client: SCTPLink.configuration { $0.maxRetransmissions = 3; $0.rtoMax = 4_000 * SCTPLink.millisecond })
        link.connect()
        link.drop = { toServer, _ in toServer }
        try link.sendFromClient([9])
        link.run(for: 30_000 * Self.ms)
        #expect(link.clientActions.last == .failed(.retransmissionsExhausted))
        #expect(link.client.state == .ended)
        let attempts = link.sentToServer.filter { $0.packet.chunks.contains { if case .data = $0 { true } else { false } } }
        #expect(attempts.count == 4)
        #expect(link.sentToServer.last.map { if case .abort = $0.packet.chunks[0] { true } else { false } } == true)
    }

    @Test func anIdleAssociationHeartbeatsAndTheAnswerKeepsItAlive() {
        var link = SCTPLink(
            client: SCTPLink.configuration { $0.heartbeatInterval = 1_000 * SCTPLink.millisecond },
            server: SCTPLink.configuration { $0.heartbeatInterval = nil })
        link.connect()
        link.run(for: 10_000 * Self.ms)
        let heartbeats = link.sentToServer.filter { if case .heartbeat = $0.packet.chunks[0] { true } else { false } }
        #expect(heartbeats.count >= 5)
        #expect(link.client.state == .established)
        #expect(link.client.errorCount == 0)
    }

    @Test func unansweredHeartbeatsFailTheAssociation() {
        var link = SCTPLink(client: SCTPLink.configuration { $0.heartbeatInterval = 1_000 * SCTPLink.millisecond; $0.maxRetransmissions = 2 })
        link.connect()
        link.drop = { toServer, _ in toServer }
        link.run(for: 20_000 * Self.ms)
        #expect(link.clientActions.last == .failed(.retransmissionsExhausted))
    }

    @Test func shutdownDeliversWhatIsQueuedThenClosesBothSides() throws {
        var link = SCTPLink()
        link.connect()
        try link.sendFromClient(Self.message(1, bytes: 5000))
        let actions = link.client.shutdown(now: link.now)
        link.absorb(actions, fromClient: true)
        link.run(for: 2_000 * Self.ms)
        #expect(link.serverDeliveries == [Self.message(1, bytes: 5000)])
        #expect(link.clientActions.last == .closed(.shutdown))
        #expect(link.serverActions.last == .closed(.shutdown))
        #expect(link.client.state == .ended && link.server.state == .ended)
    }

    @Test func anAbortClosesThePeer() {
        var link = SCTPLink()
        link.connect()
        let actions = link.server.abort(now: link.now)
        link.absorb(actions, fromClient: false)
        link.run(for: 100 * Self.ms)
        #expect(link.clientActions.last == .closed(.abortedByPeer([SCTPErrorCause(code: SCTPErrorCause.userInitiatedAbort)])))
        #expect(link.client.state == .ended)
    }

    /// RFC 6525: after the client resets its outgoing stream, both sides number it from 0 again.
    @Test func aStreamResetRestartsTheStreamsSequenceNumbers() throws {
        var link = SCTPLink()
        link.connect()
        try link.sendFromClient([1], stream: 4)
        try link.sendFromClient([2], stream: 4)
        let actions = link.client.resetOutgoingStreams([4], now: link.now)
        link.absorb(actions, fromClient: true)
        #expect(throws: SCTPSendError.streamResetting(4)) { try link.sendFromClient([0], stream: 4) }
        link.run(for: 500 * Self.ms)
        #expect(link.serverActions.contains(.incomingStreamsReset([4])))
        #expect(link.clientActions.contains(.outgoingStreamsReset([4])))
        try link.sendFromClient([3], stream: 4)
        link.run(for: 500 * Self.ms)
        #expect(link.serverDeliveries == [[1], [2], [3]])
        let ssns = link.sentToServer.compactMap { sent -> UInt16? in
            if case .data(let d) = sent.packet.chunks.last, d.userData == [3] { d.ssn } else { nil }
        }
        #expect(ssns.first == 0)
    }

    @Test func aMessageOverTheBoundAbortsTheAssociation() throws {
        var link = SCTPLink(server: SCTPLink.configuration { $0.maxIncomingMessageBytes = 10_000 })
        link.connect()
        try link.sendFromClient(Self.message(0, bytes: 20_000))
        link.run(for: 500 * Self.ms)
        guard case .failed(.aborted(let cause))? = link.serverActions.last else {
            Issue.record("the server did not abort: \(link.serverActions)")
            return
        }
        #expect(cause.code == SCTPErrorCause.protocolViolation)
        #expect(link.serverDeliveries.isEmpty)
        guard case .closed(.abortedByPeer)? = link.clientActions.last else { Issue.record("the client was not told"); return }
    }

    @Test func sendingIsRefusedPastTheMaximumMessageSize() {
        var link = SCTPLink(client: SCTPLink.configuration { $0.maxOutgoingMessageBytes = 1000 })
        link.connect()
        #expect(throws: SCTPSendError.messageTooLarge(1001)) { try link.sendFromClient(Self.message(0, bytes: 1001)) }
    }

    /// A peer that never acknowledges costs at most the send buffer.
    @Test func aPeerThatNeverAcknowledgesCostsAtMostTheSendBuffer() throws {
        var link = SCTPLink(client: SCTPLink.configuration { $0.sendBufferBytes = 64 * 1024 })
        link.connect()
        link.drop = { toServer, _ in toServer }
        var refused = false
        for index in 0..<1000 {
            do {
                try link.sendFromClient(Self.message(index, bytes: 1000))
            } catch SCTPSendError.bufferFull {
                refused = true
                break
            }
            link.run(for: 1 * Self.ms)
        }
        #expect(refused)
        #expect(link.client.sender.bufferedBytes <= 64 * 1024)
    }

    /// A peer that never fills a gap cannot make us hold more than the receive window.
    @Test func aPeerThatLeavesAGapCostsAtMostTheReceiveWindow() {
        var link = SCTPLink(server: SCTPLink.configuration { $0.receiveWindowBytes = 32 * 1024 })
        link.connect()
        var server = link.server
        let base: UInt32 = 0xFFFF_FFF0
        var window: UInt32 = .max
        for offset in 1..<200 {
            let chunk = SCTPDataChunk(tsn: base &+ UInt32(offset), stream: 0, ssn: UInt16(offset), ppid: 53, unordered: false, beginning: true, ending: true, userData: Self.message(offset, bytes: 1000))
            let bytes = SCTPPacket(sourcePort: 5000, destinationPort: 5000, verificationTag: server.localTag, chunks: [.data(chunk)]).encoded()
            for case .send(let reply) in server.receive(bytes, now: link.now) {
                if case .sack(let sack)? = try? SCTPPacket(parsing: reply).chunks.first { window = sack.advertisedWindow }
            }
        }
        #expect(server.receiver.bufferedBytes <= 32 * 1024)
        #expect(window < 1100)
    }

    /// Section 3.2: a chunk type with upper bits 01 stops the packet and is reported; 11 is
    /// reported and the rest of the packet is processed.
    @Test func unknownChunksFollowTheUpperTwoBits() throws {
        var link = SCTPLink()
        link.connect()
        var server = link.server
        let data = SCTPDataChunk(tsn: 0xFFFF_FFF0, stream: 0, ssn: 0, ppid: 51, unordered: false, beginning: true, ending: true, userData: [7])
        let stop = SCTPPacket(sourcePort: 5000, destinationPort: 5000, verificationTag: server.localTag, chunks: [.unknown(type: 0x41, flags: 0, value: []), .data(data)])
        let stopped = server.receive(stop.encoded(), now: link.now)
        #expect(!stopped.contains { if case .deliver = $0 { true } else { false } })
        #expect(try errorCauses(in: stopped) == [SCTPErrorCause.unrecognizedChunkType])
        let skip = SCTPPacket(sourcePort: 5000, destinationPort: 5000, verificationTag: server.localTag, chunks: [.unknown(type: 0xC1, flags: 0, value: [1]), .data(data)])
        let skipped = server.receive(skip.encoded(), now: link.now)
        #expect(skipped.contains(.deliver(stream: 0, ppid: 51, message: [7])))
        #expect(try errorCauses(in: skipped) == [SCTPErrorCause.unrecognizedChunkType])
    }

    /// A SACK due after control chunks that fill a packet goes in the next one, never past the
    /// path's packet size (the sctp fuzzer's find: 1,204 bytes sent on a 1,200-byte path).
    @Test func aSackThatDoesNotFitAfterTheControlChunksGoesInTheNextPacket() throws {
        var link = SCTPLink()
        link.connect()
        var server = link.server
        let limit = server.configuration.maxPacketBytes
        // DATA past a gap (a SACK at once, section 6.7), a heartbeat whose answer and the ERROR
        // about the unknown chunk then fill the packet to within 12 bytes of the path's size.
        let data = SCTPDataChunk(tsn: server.receiver.cumulativeTSN &+ 3, stream: 0, ssn: 0, ppid: 51, unordered: false, beginning: true, ending: true, userData: [7])
        let heartbeat = SCTPChunk.heartbeat(info: [UInt8](repeating: 5, count: 140))
        let unknown = SCTPChunk.unknown(type: 0x41, flags: 0, value: [UInt8](repeating: 9, count: 1_100))
        let packet = SCTPPacket(sourcePort: 5000, destinationPort: 5000, verificationTag: server.localTag, chunks: [.data(data), heartbeat, unknown])
        let sent = server.receive(packet.encoded(), now: link.now)
        var chunks: [UInt8] = []
        for case .send(let bytes) in sent {
            #expect(bytes.count <= limit, "a \(bytes.count)-byte packet on a \(limit)-byte path")
            chunks += try SCTPPacket(parsing: bytes).chunks.map(\.type)
        }
        let kinds = SCTPChunk.ChunkType.self
        #expect(chunks.contains(kinds.sack) && chunks.contains(kinds.heartbeatAck) && chunks.contains(kinds.error), "\(chunks)")
    }

    private func errorCauses(in actions: [SCTPAssociation.Action]) throws -> [UInt16] {
        var codes: [UInt16] = []
        for case .send(let bytes) in actions {
            for case .error(let causes) in try SCTPPacket(parsing: bytes).chunks { codes += causes.map(\.code) }
        }
        return codes
    }

    @Test func aPacketWithAWrongVerificationTagIsIgnored() {
        var link = SCTPLink()
        link.connect()
        var server = link.server
        let data = SCTPDataChunk(tsn: 0xFFFF_FFF0, stream: 0, ssn: 0, ppid: 51, unordered: false, beginning: true, ending: true, userData: [7])
        let packet = SCTPPacket(sourcePort: 5000, destinationPort: 5000, verificationTag: server.localTag ^ 1, chunks: [.data(data)])
        #expect(server.receive(packet.encoded(), now: link.now).isEmpty)
    }

    @Test func aDuplicateIsReportedInTheSack() throws {
        var link = SCTPLink()
        link.connect()
        var server = link.server
        let data = SCTPDataChunk(tsn: 0xFFFF_FFF0, stream: 0, ssn: 0, ppid: 51, unordered: false, beginning: true, ending: true, userData: [7])
        let bytes = SCTPPacket(sourcePort: 5000, destinationPort: 5000, verificationTag: server.localTag, chunks: [.data(data)]).encoded()
        _ = server.receive(bytes, now: link.now)
        let again = server.receive(bytes, now: link.now)
        guard case .send(let reply)? = again.first, case .sack(let sack)? = try SCTPPacket(parsing: reply).chunks.first else {
            Issue.record("no immediate SACK for a duplicate")
            return
        }
        #expect(sack.duplicateTSNs == [0xFFFF_FFF0])
        #expect(sack.cumulativeTSN == 0xFFFF_FFF0)
    }

    @Test func theRetransmissionTimeoutFollowsMeasurementsWithinItsBounds() {
        var rto = SCTPRetransmissionTimeout(initial: 1_000 * Self.ms, minimum: 400 * Self.ms, maximum: 60_000 * Self.ms)
        #expect(rto.value == 1_000 * Self.ms)
        rto.measured(100 * Self.ms)
        #expect(rto.value == 400 * Self.ms)  // 100 + 4 × 50 = 300, raised to the minimum
        rto.measured(1_000 * Self.ms)
        #expect(rto.value > 1_000 * Self.ms)
        for _ in 0..<20 { rto.backOff() }
        #expect(rto.value == 60_000 * Self.ms)
    }
}
