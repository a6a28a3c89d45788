/// RFC 6455 framing from the client's side: frames we send are masked (section 5.3, written by
/// Server's `WebSocketClientFrame`), frames the server sends are not, and a masked server frame is
/// a protocol error.
enum ClientFrame {
    static let text: UInt8 = 0x1
    static let binary: UInt8 = 0x2
    static let close: UInt8 = 0x8
    static let ping: UInt8 = 0x9
    static let pong: UInt8 = 0xA
}

/// One frame from the server, located in a byte buffer.
struct ServerFrame {
    let final: Bool
    let opcode: UInt8
    /// Where the payload starts and how long it is, within the buffer given to `parse`.
    let payloadOffset: Int
    let payloadLength: Int
    var totalLength: Int { payloadOffset + payloadLength }

    enum Parse {
        case needMore
        case frame(ServerFrame)
        /// The server broke the protocol; the reason names how.
        case invalid(String)
    }

    /// Reads one frame header at the start of `bytes`; `.frame` only once the whole payload is there.
    static func parse(_ bytes: UnsafeRawBufferPointer, maxPayload: Int) -> Parse {
        guard bytes.count >= 2 else { return .needMore }
        let first = bytes[0], second = bytes[1]
        guard first & 0x70 == 0 else { return .invalid("reserved bits set") }
        guard second & 0x80 == 0 else { return .invalid("masked server frame") }
        let opcode = first & 0x0F
        var length = Int(second & 0x7F)
        var offset = 2
        if length == 126 {
            guard bytes.count >= 4 else { return .needMore }
            length = Int(bytes[2]) << 8 | Int(bytes[3])
            offset = 4
        } else if length == 127 {
            guard bytes.count >= 10 else { return .needMore }
            var wide: UInt64 = 0
            for i in 2..<10 { wide = wide << 8 | UInt64(bytes[i]) }
            guard wide <= UInt64(maxPayload) else { return .invalid("frame larger than \(maxPayload) bytes") }
            length = Int(wide)
            offset = 10
        }
        guard length <= maxPayload else { return .invalid("frame larger than \(maxPayload) bytes") }
        if opcode & 0x8 != 0 {
            guard first & 0x80 != 0, length <= 125 else { return .invalid("fragmented or long control frame") }
        }
        guard bytes.count >= offset + length else { return .needMore }
        return .frame(ServerFrame(final: first & 0x80 != 0, opcode: opcode, payloadOffset: offset, payloadLength: length))
    }
}
