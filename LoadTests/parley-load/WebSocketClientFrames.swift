/// RFC 6455 framing from the client's side: frames we send are masked (section 5.3), frames the
/// server sends are not, and a masked server frame is a protocol error.
enum ClientFrame {
    static let text: UInt8 = 0x1
    static let binary: UInt8 = 0x2
    static let close: UInt8 = 0x8
    static let ping: UInt8 = 0x9
    static let pong: UInt8 = 0xA

    /// Two bytes, an eight-byte length, a four-byte mask.
    static let maxHeaderBytes = 14

    /// Writes one final, masked frame into `out` (which must hold `maxHeaderBytes + payload.count`)
    /// and returns its length.
    static func encode(opcode: UInt8, payload: UnsafeRawBufferPointer, mask: UInt32,
                       into out: UnsafeMutableRawBufferPointer) -> Int {
        out[0] = 0x80 | opcode
        var n: Int
        switch payload.count {
        case ..<126:
            out[1] = 0x80 | UInt8(payload.count)
            n = 2
        case ..<65536:
            out[1] = 0x80 | 126
            out[2] = UInt8(payload.count >> 8)
            out[3] = UInt8(payload.count & 0xFF)
            n = 4
        default:
            out[1] = 0x80 | 127
            for i in 0..<8 { out[2 + i] = UInt8(truncatingIfNeeded: UInt64(payload.count) >> (56 - 8 * UInt64(i))) }
            n = 10
        }
        let maskBytes = withUnsafeBytes(of: mask) { Array($0) }
        for i in 0..<4 { out[n + i] = maskBytes[i] }
        n += 4
        applyMask(maskBytes, from: payload, to: UnsafeMutableRawBufferPointer(rebasing: out[n..<(n + payload.count)]))
        return n + payload.count
    }

    /// A whole frame as an array: for the occasional control frame.
    static func encoded(opcode: UInt8, payload: [UInt8], mask: UInt32) -> [UInt8] {
        var frame = [UInt8](repeating: 0, count: maxHeaderBytes + payload.count)
        let n = frame.withUnsafeMutableBytes { out in
            payload.withUnsafeBytes { encode(opcode: opcode, payload: $0, mask: mask, into: out) }
        }
        frame.removeLast(frame.count - n)
        return frame
    }

    /// XORs eight bytes at a time: echo tests with large messages otherwise spend their CPU here.
    private static func applyMask(_ mask: [UInt8], from source: UnsafeRawBufferPointer, to out: UnsafeMutableRawBufferPointer) {
        let wide = mask.withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }
        let wide64 = UInt64(wide) | UInt64(wide) << 32
        var i = 0
        while i + 8 <= source.count {
            out.storeBytes(of: source.loadUnaligned(fromByteOffset: i, as: UInt64.self) ^ wide64, toByteOffset: i, as: UInt64.self)
            i += 8
        }
        while i < source.count {
            out[i] = source[i] ^ mask[i & 3]
            i += 1
        }
    }
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
