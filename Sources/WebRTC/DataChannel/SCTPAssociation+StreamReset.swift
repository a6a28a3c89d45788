/// Stream reset (RFC 6525), which is how WebRTC closes a data channel (RFC 8831 section 6.7):
/// each side resets its outgoing stream, and the other resets its incoming one to match.
struct SCTPStreamResetState {
    /// The number our next request carries, and the one the peer's next request should.
    var localRequestSequence: UInt32 = 0
    var peerRequestSequence: UInt32 = 0
    /// Our request in flight, sent again each RTO until answered (section 5.1.1).
    var request: (sequence: UInt32, streams: [UInt16], lastAssignedTSN: UInt32)?
    var deadline: UInt64?
    /// Streams waiting for the request in flight to be answered.
    var queued: [UInt16] = []
    /// The peer's request waiting for data sent before it (section 5.2.2's deferred reset).
    var deferred: (sequence: UInt32, lastAssignedTSN: UInt32, streams: [UInt16])?
    /// The answer to the peer's last performed request, repeated if it asks again.
    var lastResult: UInt32 = SCTPReconfigParameter.Result.successPerformed

    init(localRequestSequence: UInt32 = 0, peerRequestSequence: UInt32 = 0) {
        self.localRequestSequence = localRequestSequence
        self.peerRequestSequence = peerRequestSequence
    }

    func isResetting(_ stream: UInt16) -> Bool {
        request?.streams.contains(stream) == true || queued.contains(stream)
    }
}

extension SCTPAssociation {
    /// Resets our outgoing streams (RFC 6525 section 5.1.2): what is already queued on them is
    /// sent first (the request names the last TSN assigned), and nothing new goes on them
    /// until the peer has answered. Streams asked for while a request is in flight go next.
    mutating func resetOutgoingStreams(_ streams: [UInt16], now: UInt64) -> [Action] {
        guard state == .established, !streams.isEmpty else { return [] }
        for stream in streams where !streamReset.isResetting(stream) && streamReset.queued.count < 4096 {
            streamReset.queued.append(stream)
        }
        var actions: [Action] = []
        sendNextResetRequest(now: now)
        flush(now: now, into: &actions)
        return actions
    }

    private mutating func sendNextResetRequest(now: UInt64) {
        guard streamReset.request == nil, !streamReset.queued.isEmpty else { return }
        let streams = Array(streamReset.queued.prefix(256))
        streamReset.queued.removeFirst(streams.count)
        streamReset.request = (streamReset.localRequestSequence, streams, sender.lastAssignedTSN)
        resendResetRequest(now: now)
    }

    mutating func resendResetRequest(now: UInt64) {
        guard let request = streamReset.request else {
            streamReset.deadline = nil
            return
        }
        control.append(.reconfig([.outgoingReset(
            requestSequence: request.sequence, responseSequence: streamReset.peerRequestSequence &- 1,
            lastAssignedTSN: request.lastAssignedTSN, streams: request.streams)]))
        streamReset.deadline = now &+ rto.value
    }

    /// A RE-CONFIG chunk's requests and responses (RFC 6525 section 5.2).
    mutating func handleReconfig(_ parameters: [SCTPReconfigParameter], now: UInt64, into actions: inout [Action]) {
        guard state == .established || state == .shutdownPending || state == .shutdownSent else { return }
        for parameter in parameters.prefix(4) {
            switch parameter {
            case .outgoingReset(let sequence, _, let lastAssignedTSN, let streams):
                handleOutgoingResetRequest(sequence: sequence, lastAssignedTSN: lastAssignedTSN, streams: streams, into: &actions)
            case .incomingReset(let sequence, _):
                // The peer asks us to reset our outgoing streams; WebRTC closes channels from the
                // sending side only (RFC 8831 section 6.7), so this is declined.
                refuse(sequence: sequence)
            case .other(_, let value):
                var reader = SCTPReader(value)
                if let sequence = try? reader.u32() { refuse(sequence: sequence) }
            case .response(let sequence, let result, _, _):
                handleResetResponse(sequence: sequence, result: result, now: now, into: &actions)
            }
        }
    }

    private mutating func respond(_ sequence: UInt32, _ result: UInt32) {
        control.append(.reconfig([.response(responseSequence: sequence, result: result, senderNextTSN: nil, receiverNextTSN: nil)]))
    }

    private mutating func refuse(sequence: UInt32) {
        if sequence == streamReset.peerRequestSequence {
            streamReset.peerRequestSequence &+= 1
            streamReset.lastResult = SCTPReconfigParameter.Result.denied
        }
        respond(sequence, SCTPReconfigParameter.Result.denied)
    }

    /// Section 5.2.2: the peer resets its outgoing streams once every TSN up to its last assigned
    /// one has arrived; until then the reset is deferred and answered "in progress".
    private mutating func handleOutgoingResetRequest(sequence: UInt32, lastAssignedTSN: UInt32, streams: [UInt16], into actions: inout [Action]) {
        if sequence == streamReset.peerRequestSequence &- 1 {
            // A retransmission of the request last performed: the same answer again.
            respond(sequence, streamReset.lastResult)
            return
        }
        guard sequence == streamReset.peerRequestSequence else {
            respond(sequence, SCTPReconfigParameter.Result.errorBadSequenceNumber)
            return
        }
        streamReset.deferred = (sequence, lastAssignedTSN, streams)
        if !performDeferredReset(into: &actions) { respond(sequence, SCTPReconfigParameter.Result.inProgress) }
    }

    /// Performs the deferred incoming reset once the data before it has all arrived.
    @discardableResult
    mutating func performDeferredReset(into actions: inout [Action]) -> Bool {
        guard let request = streamReset.deferred, Serial.lessOrEqual(request.lastAssignedTSN, receiver.cumulativeTSN) else { return false }
        streamReset.deferred = nil
        receiver.resetStreams(request.streams)
        streamReset.peerRequestSequence &+= 1
        streamReset.lastResult = SCTPReconfigParameter.Result.successPerformed
        respond(request.sequence, SCTPReconfigParameter.Result.successPerformed)
        actions.append(.incomingStreamsReset(request.streams))
        return true
    }

    private mutating func handleResetResponse(sequence: UInt32, result: UInt32, now: UInt64, into actions: inout [Action]) {
        guard let request = streamReset.request, request.sequence == sequence else { return }
        if result == SCTPReconfigParameter.Result.inProgress {
            // Asked again after an RTO (section 5.2.7).
            streamReset.deadline = now &+ rto.value
            return
        }
        errorCount = 0
        streamReset.request = nil
        streamReset.deadline = nil
        streamReset.localRequestSequence &+= 1
        if result == SCTPReconfigParameter.Result.successPerformed || result == SCTPReconfigParameter.Result.successNothingToDo {
            sender.resetStreams(request.streams)
            actions.append(.outgoingStreamsReset(request.streams))
        }
        sendNextResetRequest(now: now)
    }
}
