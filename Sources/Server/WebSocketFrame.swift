/// RFC 6455 section 5.2 opcodes.
public enum WebSocketOpcode: UInt8, Sendable {
    case continuation = 0x0
    case text = 0x1
    case binary = 0x2
    case close = 0x8
    case ping = 0x9
    case pong = 0xA

    var isControl: Bool { rawValue & 0x8 != 0 }
}

/// The two kinds of data message.
public enum WebSocketMessageKind: Sendable {
    case text, binary

    var opcode: WebSocketOpcode { self == .text ? .text : .binary }
}

/// A close status code (RFC 6455 section 7.4).
public struct WebSocketCloseCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let normal = WebSocketCloseCode(rawValue: 1000)
    public static let goingAway = WebSocketCloseCode(rawValue: 1001)
    public static let protocolError = WebSocketCloseCode(rawValue: 1002)
    public static let unsupportedData = WebSocketCloseCode(rawValue: 1003)
    /// Never sent: stands for "the close frame carried no code".
    public static let noStatus = WebSocketCloseCode(rawValue: 1005)
    /// Never sent: stands for "the connection ended without a close frame".
    public static let abnormal = WebSocketCloseCode(rawValue: 1006)
    public static let invalidPayload = WebSocketCloseCode(rawValue: 1007)
    public static let policyViolation = WebSocketCloseCode(rawValue: 1008)
    public static let messageTooBig = WebSocketCloseCode(rawValue: 1009)
    public static let internalError = WebSocketCloseCode(rawValue: 1011)
    /// The server is restarting (IANA registry): reconnect, and resume if you can.
    public static let serviceRestart = WebSocketCloseCode(rawValue: 1012)
    public static let tryAgainLater = WebSocketCloseCode(rawValue: 1013)

    /// Codes a peer may put in a close frame: the RFC's defined ones, the later IANA registrations
    /// 1012-1014, and the ranges for libraries (3000-3999) and applications (4000-4999).
    public var isValidOnWire: Bool {
        switch rawValue {
        case 1000...1003, 1007...1014, 3000...4999: return true
        default: return false
        }
    }

    public var description: String { String(rawValue) }
}

/// Encodes server frames: never masked (RFC 6455 section 5.1), always final.
enum WebSocketFrameWriter {
    /// Longest header: two bytes, then a 64-bit length.
    static let maxHeaderBytes = 10

    /// Writes the header for a final, unmasked frame into `out`; returns its length.
    static func header(_ opcode: WebSocketOpcode, payloadLength: Int, into out: UnsafeMutableRawBufferPointer) -> Int {
        out[0] = 0x80 | opcode.rawValue
        return 1 + length(payloadLength, maskBit: 0, into: UnsafeMutableRawBufferPointer(rebasing: out[1...]))
    }

    /// The second byte on (section 5.2): the mask bit and the 7-bit length, then the 16- or 64-bit
    /// extended length in network order when the payload needs one. Returns the bytes written.
    static func length(_ payloadLength: Int, maskBit: UInt8, into out: UnsafeMutableRawBufferPointer) -> Int {
        switch payloadLength {
        case ..<126:
            out[0] = maskBit | UInt8(payloadLength)
            return 1
        case ..<65536:
            out[0] = maskBit | 126
            out[1] = UInt8(payloadLength >> 8)
            out[2] = UInt8(payloadLength & 0xFF)
            return 3
        default:
            out[0] = maskBit | 127
            for i in 0..<8 { out[1 + i] = UInt8(truncatingIfNeeded: UInt64(payloadLength) >> (56 - 8 * UInt64(i))) }
            return 9
        }
    }

    /// A close frame's payload: the code in network order, then at most 123 bytes of UTF-8 reason.
    static func closePayload(_ code: WebSocketCloseCode, reason: String) -> [UInt8] {
        var payload = [UInt8(code.rawValue >> 8), UInt8(code.rawValue & 0xFF)]
        var utf8 = Array(reason.utf8.prefix(123))
        // Do not cut a code point in half.
        while !utf8.withUnsafeBytes({ UTF8Validator.isValid($0) }) { utf8.removeLast() }
        payload += utf8
        return payload
    }
}
