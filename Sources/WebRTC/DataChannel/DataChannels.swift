/// WebRTC's data channels (RFC 8831) over one SCTP association: the channels the peer opens
/// with DATA_CHANNEL_OPEN (RFC 8832), their messages by PPID, and their closing by stream
/// reset. A value like the association under it: DTLS plaintext and time in, actions out.
package struct DataChannels {
    /// Which end of DTLS this is: RFC 8832 section 6 gives the DTLS client even stream numbers
    /// and the server odd ones, so the two never pick the same stream for a new channel.
    package enum DTLSRole: Sendable {
        case client, server
    }

    package enum Message: Equatable, Sendable {
        case text(String)
        case binary([UInt8])
    }

    package enum Action: Equatable, Sendable {
        /// An SCTP packet for DTLS to send.
        case send([UInt8])
        /// The association is up; channels can open.
        case connected
        case opened(stream: UInt16, label: String, protocol: String)
        case message(stream: UInt16, Message)
        case closed(stream: UInt16)
        /// The association is over; every channel was reported closed before this.
        case ended(SCTPAssociation.Action)
    }

    /// RFC 8831 section 8's payload protocol identifiers.
    enum PPID {
        static let control: UInt32 = 50
        static let string: UInt32 = 51
        static let binary: UInt32 = 53
        static let emptyString: UInt32 = 56
        static let emptyBinary: UInt32 = 57
    }

    struct Channel: Equatable, Sendable {
        var label: String
        var `protocol`: String
        var ordered: Bool
        /// Ours and not yet acknowledged: sent ordered until the ACK (RFC 8832 section 6).
        var awaitingAck: Bool
        /// Our outgoing stream has been reset: nothing more is sent.
        var closing: Bool
    }

    /// Channels at once; a peer opening more has the extra ones refused by a stream reset.
    static let maxChannels = 256

    private(set) var association: SCTPAssociation
    let role: DTLSRole
    private(set) var channels: [UInt16: Channel] = [:]
    /// The association's buffers and the channel table (about 128 bytes a channel, its label's included).
    var heapBytes: Int { association.heapBytes + channels.count * 128 }

    package init(association: SCTPAssociation = SCTPAssociation(), role: DTLSRole = .server) {
        self.association = association
        self.role = role
    }

    package var nextDeadline: UInt64? { association.nextDeadline }

    /// Starts the association from this side (the browser's side; Parley waits for its INIT).
    package mutating func connect(now: UInt64) -> [Action] {
        handle(association.connect(now: now), now: now)
    }

    /// Takes one SCTP packet, the plaintext of a DTLS record.
    package mutating func receive(_ packet: [UInt8], now: UInt64) -> [Action] {
        handle(association.receive(packet, now: now), now: now)
    }

    package mutating func tick(now: UInt64) -> [Action] {
        handle(association.tick(now: now), now: now)
    }

    package mutating func send(text: String, on stream: UInt16, now: UInt64) throws(SCTPSendError) -> [Action] {
        let bytes = Array(text.utf8)
        return try send(bytes.isEmpty ? [0] : bytes, ppid: bytes.isEmpty ? PPID.emptyString : PPID.string, on: stream, now: now)
    }

    mutating func send(binary: [UInt8], on stream: UInt16, now: UInt64) throws(SCTPSendError) -> [Action] {
        // RFC 8831 section 6.6: an empty message goes as one byte with the "empty" PPID.
        try send(binary.isEmpty ? [0] : binary, ppid: binary.isEmpty ? PPID.emptyBinary : PPID.binary, on: stream, now: now)
    }

    private mutating func send(_ bytes: [UInt8], ppid: UInt32, on stream: UInt16, now: UInt64) throws(SCTPSendError) -> [Action] {
        guard let channel = channels[stream], !channel.closing else { throw .noSuchChannel(stream) }
        let actions = try association.send(bytes, stream: stream, ppid: ppid, ordered: channel.ordered || channel.awaitingAck, now: now)
        return handle(actions, now: now)
    }

    /// Opens a channel from this side on the lowest free stream of its parity (RFC 8832
    /// section 6). Parley only answers the browser's, but tests play the browser with this.
    package mutating func open(label: String, protocol: String = "", ordered: Bool = true, now: UInt64) throws(DataChannelError) -> (stream: UInt16, actions: [Action]) {
        guard channels.count < Self.maxChannels else { throw .tooManyChannels }
        var stream: UInt16 = role == .client ? 0 : 1
        while channels[stream] != nil {
            guard stream < association.outboundStreams &- 2 else { throw .noStreamAvailable }
            stream += 2
        }
        guard stream < association.outboundStreams else { throw .noStreamAvailable }
        let open = DataChannelOpen(channelType: ordered ? 0x00 : 0x80, label: label, protocol: `protocol`)
        channels[stream] = Channel(label: label, protocol: `protocol`, ordered: ordered, awaitingAck: true, closing: false)
        do {
            let actions = try association.send(DataChannelControlMessage.open(open).encoded(), stream: stream, ppid: PPID.control, ordered: true, now: now)
            return (stream, handle(actions, now: now))
        } catch {
            channels[stream] = nil
            throw .noStreamAvailable
        }
    }

    /// Closes a channel (RFC 8831 section 6.7): our outgoing stream is reset, the peer resets
    /// its own in answer, and then the channel is reported closed.
    mutating func close(stream: UInt16, now: UInt64) -> [Action] {
        guard var channel = channels[stream], !channel.closing else { return [] }
        channel.closing = true
        channels[stream] = channel
        return handle(association.resetOutgoingStreams([stream], now: now), now: now)
    }

    /// Closes every channel and the association gracefully.
    mutating func shutdown(now: UInt64) -> [Action] {
        handle(association.shutdown(now: now), now: now)
    }

    private mutating func handle(_ actions: [SCTPAssociation.Action], now: UInt64) -> [Action] {
        var out: [Action] = []
        for action in actions {
            switch action {
            case .send(let bytes):
                out.append(.send(bytes))
            case .established:
                out.append(.connected)
            case .deliver(let stream, let ppid, let message):
                deliver(message, stream: stream, ppid: ppid, now: now, into: &out)
            case .incomingStreamsReset(let streams):
                // The peer closed these; we reset our side too, unless we began it.
                let affected = streams.isEmpty ? Array(channels.keys).sorted() : streams
                var ours: [UInt16] = []
                for stream in affected {
                    guard let channel = channels.removeValue(forKey: stream) else { continue }
                    if !channel.closing { ours.append(stream) }
                    out.append(.closed(stream: stream))
                }
                if !ours.isEmpty { out += handle(association.resetOutgoingStreams(ours, now: now), now: now) }
            case .outgoingStreamsReset:
                break
            case .closed, .failed:
                for stream in channels.keys.sorted() { out.append(.closed(stream: stream)) }
                channels = [:]
                out.append(.ended(action))
            }
        }
        return out
    }

    private mutating func deliver(_ message: [UInt8], stream: UInt16, ppid: UInt32, now: UInt64, into out: inout [Action]) {
        switch ppid {
        case PPID.control:
            guard let control = try? DataChannelControlMessage(parsing: message) else { return }
            switch control {
            case .open(let open):
                accept(open, stream: stream, now: now, into: &out)
            case .ack:
                guard var channel = channels[stream], channel.awaitingAck else { return }
                channel.awaitingAck = false
                channels[stream] = channel
                out.append(.opened(stream: stream, label: channel.label, protocol: channel.protocol))
            }
        case PPID.string:
            // Text that is not UTF-8 is not a string message; it is dropped rather than passed on.
            guard channels[stream] != nil, let text = String(validating: message, as: UTF8.self) else { return }
            out.append(.message(stream: stream, .text(text)))
        case PPID.binary:
            guard channels[stream] != nil else { return }
            out.append(.message(stream: stream, .binary(message)))
        case PPID.emptyString:
            guard channels[stream] != nil else { return }
            out.append(.message(stream: stream, .text("")))
        case PPID.emptyBinary:
            guard channels[stream] != nil else { return }
            out.append(.message(stream: stream, .binary([])))
        default:
            // 52 and 54 were PPID-based fragmentation, deprecated (RFC 8831 section 8); others
            // are not data channel messages.
            break
        }
    }

    /// A DATA_CHANNEL_OPEN (RFC 8832 section 6): on a free stream of the peer's parity it opens
    /// the channel, acknowledged on the same stream; otherwise it is ignored, or the stream
    /// reset if there are too many channels.
    private mutating func accept(_ open: DataChannelOpen, stream: UInt16, now: UInt64, into out: inout [Action]) {
        let peerParity: UInt16 = role == .server ? 0 : 1
        guard stream % 2 == peerParity, channels[stream] == nil else { return }
        guard channels.count < Self.maxChannels else {
            out += handle(association.resetOutgoingStreams([stream], now: now), now: now)
            return
        }
        channels[stream] = Channel(label: open.label, protocol: open.protocol, ordered: open.ordered, awaitingAck: false, closing: false)
        out.append(.opened(stream: stream, label: open.label, protocol: open.protocol))
        if let actions = try? association.send(DataChannelControlMessage.ack.encoded(), stream: stream, ppid: PPID.control, ordered: true, now: now) {
            out += handle(actions, now: now)
        }
    }
}
