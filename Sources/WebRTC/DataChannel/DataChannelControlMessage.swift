/// The Data Channel Establishment Protocol's messages (RFC 8832 section 5), sent with PPID 50.
enum DataChannelControlMessage: Equatable, Sendable {
    case open(DataChannelOpen)
    case ack

    static let openType: UInt8 = 0x03
    static let ackType: UInt8 = 0x02
    /// A label or protocol longer than this is refused: RFC 8832 allows 65,535 bytes, and no
    /// sender needs a hundredth of it.
    static let maxFieldBytes = 1024

    init(parsing bytes: [UInt8]) throws(DataChannelError) {
        var reader = SCTPReader(bytes)
        do {
            switch try reader.u8() {
            case Self.ackType:
                self = .ack
            case Self.openType:
                let channelType = try reader.u8()
                let priority = try reader.u16()
                let reliability = try reader.u32()
                let labelLength = Int(try reader.u16())
                let protocolLength = Int(try reader.u16())
                guard labelLength <= Self.maxFieldBytes, protocolLength <= Self.maxFieldBytes else { throw DataChannelError.fieldTooLong }
                guard let label = String(validating: try reader.take(labelLength), as: UTF8.self),
                    let proto = String(validating: try reader.take(protocolLength), as: UTF8.self)
                else { throw DataChannelError.invalidUTF8 }
                guard DataChannelOpen.knownChannelTypes.contains(channelType) else { throw DataChannelError.unknownChannelType(channelType) }
                self = .open(DataChannelOpen(channelType: channelType, priority: priority, reliability: reliability, label: label, protocol: proto))
            case let type:
                throw DataChannelError.unknownMessageType(type)
            }
        } catch let error as DataChannelError {
            throw error
        } catch {
            throw .truncated
        }
    }

    func encoded() -> [UInt8] {
        switch self {
        case .ack:
            return [Self.ackType]
        case .open(let open):
            let label = Array(open.label.utf8.prefix(Self.maxFieldBytes))
            let proto = Array(open.protocol.utf8.prefix(Self.maxFieldBytes))
            var writer = SCTPWriter(capacity: 12 + label.count + proto.count)
            writer.u8(Self.openType)
            writer.u8(open.channelType)
            writer.u16(open.priority)
            writer.u32(open.reliability)
            writer.u16(UInt16(label.count))
            writer.u16(UInt16(proto.count))
            writer.append(label)
            writer.append(proto)
            return writer.bytes
        }
    }
}

/// DATA_CHANNEL_OPEN (RFC 8832 section 5.1).
struct DataChannelOpen: Equatable, Sendable {
    /// 0x00 reliable, 0x01 partial reliability by retransmissions, 0x02 by time; the high bit
    /// makes each unordered.
    var channelType: UInt8
    var priority: UInt16
    /// Retransmissions or milliseconds, by the channel type.
    var reliability: UInt32
    var label: String
    var `protocol`: String

    static let knownChannelTypes: Set<UInt8> = [0x00, 0x01, 0x02, 0x80, 0x81, 0x82]

    var ordered: Bool { channelType & 0x80 == 0 }

    init(channelType: UInt8 = 0, priority: UInt16 = 256, reliability: UInt32 = 0, label: String, protocol: String = "") {
        self.channelType = channelType
        self.priority = priority
        self.reliability = reliability
        self.label = label
        self.protocol = `protocol`
    }
}

/// Why a data channel message was refused.
package enum DataChannelError: Error, Equatable, CustomStringConvertible {
    case truncated
    case fieldTooLong
    case invalidUTF8
    case unknownChannelType(UInt8)
    case unknownMessageType(UInt8)
    case noStreamAvailable
    case tooManyChannels

    package var description: String {
        switch self {
        case .truncated: "the DCEP message ends inside a field"
        case .fieldTooLong: "a label or protocol is over \(DataChannelControlMessage.maxFieldBytes) bytes"
        case .invalidUTF8: "a label or protocol is not UTF-8"
        case .unknownChannelType(let type): "unknown channel type \(type)"
        case .unknownMessageType(let type): "unknown DCEP message type \(type)"
        case .noStreamAvailable: "no stream of this side's parity is free"
        case .tooManyChannels: "too many data channels open"
        }
    }
}
