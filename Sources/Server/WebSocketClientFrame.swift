/// Frames as a client sends them: masked with a fresh key (RFC 6455 section 5.3), so that a
/// client's bytes cannot be chosen to look like something else to a proxy. The one encoder for
/// Parley's own clients: `parley talk`, the load harness and the tests (which also make broken
/// frames on purpose: unmasked, fragmented, with reserved bits).
public enum WebSocketClientFrame {
    /// Two bytes, an eight-byte length, a four-byte mask.
    public static let maxHeaderBytes = 14

    /// Writes one frame into `out` (which must hold `maxHeaderBytes + payload.count`) and returns
    /// its length.
    public static func encode(opcode: UInt8, payload: UnsafeRawBufferPointer, mask: UInt32, into out: UnsafeMutableRawBufferPointer,
                              fin: Bool = true, masked: Bool = true, reservedBits: UInt8 = 0) -> Int {
        out[0] = (fin ? 0x80 : 0) | (reservedBits & 0x70) | (opcode & 0x0F)
        var n = 1 + WebSocketFrameWriter.length(payload.count, maskBit: masked ? 0x80 : 0, into: UnsafeMutableRawBufferPointer(rebasing: out[1...]))
        guard masked else {
            UnsafeMutableRawBufferPointer(rebasing: out[n..<(n + payload.count)]).copyMemory(from: payload)
            return n + payload.count
        }
        out.storeBytes(of: mask, toByteOffset: n, as: UInt32.self)
        n += 4
        applyMask(mask, from: payload, to: UnsafeMutableRawBufferPointer(rebasing: out[n..<(n + payload.count)]))
        return n + payload.count
    }

    /// A whole frame as an array: for the occasional control frame, and for tests.
    public static func encoded(opcode: UInt8, payload: [UInt8], mask: UInt32 = randomMask(),
                               fin: Bool = true, masked: Bool = true, reservedBits: UInt8 = 0) -> [UInt8] {
        var frame = [UInt8](repeating: 0, count: maxHeaderBytes + payload.count)
        let n = frame.withUnsafeMutableBytes { out in
            payload.withUnsafeBytes { encode(opcode: opcode, payload: $0, mask: mask, into: out, fin: fin, masked: masked, reservedBits: reservedBits) }
        }
        frame.removeLast(frame.count - n)
        return frame
    }

    /// A masking key from the system's generator (section 5.3 asks for one a proxy cannot predict).
    public static func randomMask() -> UInt32 { UInt32.random(in: 0...UInt32.max) }

    /// XORs eight bytes at a time: echo tests with large messages otherwise spend their CPU here.
    /// The key is applied in the byte order it was written in, so `mask`'s memory bytes are the key.
    private static func applyMask(_ mask: UInt32, from source: UnsafeRawBufferPointer, to out: UnsafeMutableRawBufferPointer) {
        let wide64 = UInt64(mask) | UInt64(mask) << 32
        var i = 0
        while i + 8 <= source.count {
            out.storeBytes(of: source.loadUnaligned(fromByteOffset: i, as: UInt64.self) ^ wide64, toByteOffset: i, as: UInt64.self)
            i += 8
        }
        while i < source.count {
            out[i] = source[i] ^ UInt8(truncatingIfNeeded: mask >> (8 * UInt32(i & 3)))
            i += 1
        }
    }
}
