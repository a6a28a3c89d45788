/// A RE-CONFIG chunk's parameter (RFC 6525 section 4). WebRTC closes a data channel by resetting
/// its stream's outgoing sequence numbers (RFC 8831 section 6.7), so the outgoing request and the
/// response are what matter; other requests are kept as type and value and answered "denied".
enum SCTPReconfigParameter: Equatable, Sendable {
    /// Section 4.1: the sender resets its outgoing streams (all of them when `streams` is empty)
    /// once everything up to `lastAssignedTSN` has arrived.
    case outgoingReset(requestSequence: UInt32, responseSequence: UInt32, lastAssignedTSN: UInt32, streams: [UInt16])
    /// Section 4.2: the sender asks the receiver to reset the receiver's outgoing streams.
    case incomingReset(requestSequence: UInt32, streams: [UInt16])
    /// Section 4.4: the answer to the request numbered `responseSequence`.
    case response(responseSequence: UInt32, result: UInt32, senderNextTSN: UInt32?, receiverNextTSN: UInt32?)
    case other(type: UInt16, value: [UInt8])

    static let outgoingResetType: UInt16 = 13
    static let incomingResetType: UInt16 = 14
    static let responseType: UInt16 = 16

    /// Section 4.4's result codes.
    enum Result {
        static let successNothingToDo: UInt32 = 0
        static let successPerformed: UInt32 = 1
        static let denied: UInt32 = 2
        static let errorBadSequenceNumber: UInt32 = 5
        static let inProgress: UInt32 = 6
    }

    init(type: UInt16, value: [UInt8]) throws(SCTPPacketError) {
        var reader = SCTPReader(value)
        switch type {
        case Self.outgoingResetType:
            let request = try reader.u32(), response = try reader.u32(), last = try reader.u32()
            self = .outgoingReset(requestSequence: request, responseSequence: response, lastAssignedTSN: last, streams: try Self.streams(&reader))
        case Self.incomingResetType:
            let request = try reader.u32()
            self = .incomingReset(requestSequence: request, streams: try Self.streams(&reader))
        case Self.responseType:
            let response = try reader.u32(), result = try reader.u32()
            switch reader.remaining {
            case 0: self = .response(responseSequence: response, result: result, senderNextTSN: nil, receiverNextTSN: nil)
            case 8: self = .response(responseSequence: response, result: result, senderNextTSN: try reader.u32(), receiverNextTSN: try reader.u32())
            default: throw .malformedChunk(type: SCTPChunk.ChunkType.reconfig)
            }
        default:
            self = .other(type: type, value: value)
        }
    }

    private static func streams(_ reader: inout SCTPReader) throws(SCTPPacketError) -> [UInt16] {
        // A stream list's padding is not counted in the length (section 4.1).
        guard reader.remaining % 2 == 0 else { throw .malformedChunk(type: SCTPChunk.ChunkType.reconfig) }
        var streams: [UInt16] = []
        streams.reserveCapacity(reader.remaining / 2)
        while !reader.isAtEnd { streams.append(try reader.u16()) }
        return streams
    }

    func encode(into writer: inout SCTPWriter) {
        var body = SCTPWriter()
        let type: UInt16
        switch self {
        case .outgoingReset(let request, let response, let last, let streams):
            type = Self.outgoingResetType
            body.u32(request); body.u32(response); body.u32(last)
            for stream in streams.prefix(32_757) { body.u16(stream) }
        case .incomingReset(let request, let streams):
            type = Self.incomingResetType
            body.u32(request)
            for stream in streams.prefix(32_757) { body.u16(stream) }
        case .response(let response, let result, let senderNext, let receiverNext):
            type = Self.responseType
            body.u32(response); body.u32(result)
            if let senderNext, let receiverNext { body.u32(senderNext); body.u32(receiverNext) }
        case .other(let otherType, let value):
            type = otherType
            body.append(value)
        }
        writer.tlv(type, body.bytes)
    }
}
