/// Reads client frames out of raw bytes, enforcing RFC 6455's framing rules. Pure: bytes in,
/// events out, no I/O.
///
/// Data-frame payloads are handed out in chunks as they arrive (unmasked in place), so neither a
/// large frame nor a slow sender makes the reader buffer anything, and invalid UTF-8 fails at the
/// first bad byte. Only an incomplete frame header or control frame (at most 131 bytes) is left for
/// the caller to keep.
struct WebSocketFrameReader {
    enum Event {
        /// Not enough bytes for the next step; the caller keeps the unconsumed rest.
        case needMore
        /// Payload bytes of a data message, unmasked. `first` and `last` bound the message.
        case data(WebSocketMessageKind, UnsafeMutableRawBufferPointer, first: Bool, last: Bool)
        case ping(UnsafeMutableRawBufferPointer)
        case pong(UnsafeMutableRawBufferPointer)
        /// A valid close frame: its code (`.noStatus` if none) and UTF-8 reason.
        case close(WebSocketCloseCode, UnsafeMutableRawBufferPointer)
        /// The peer broke the protocol: close with this code. The reader is finished.
        case failure(WebSocketCloseCode, String)
    }

    private struct DataFrame {
        // Widest first, and the mask offset (0-3) a byte: 15 bytes with the optional, not 26.
        var remaining: UInt64
        let mask: UInt32
        var maskOffset: UInt8
        let fin: Bool
    }

    private struct Message {
        var length: Int = 0
        let kind: WebSocketMessageKind
        var started = false
        var utf8 = UTF8Validator()
    }

    private var frame: DataFrame?
    private var message: Message?
    /// After the optionals, and 32 bits (the setting's range is far below 2 GiB): 36 bytes in all.
    private let maxMessageLength: Int32
    var maxMessageBytes: Int { Int(maxMessageLength) }

    init(maxMessageBytes: Int) {
        maxMessageLength = Int32(clamping: maxMessageBytes)
    }

    /// True while a data message is partly received.
    var isInsideMessage: Bool { message != nil }
    /// True while a data frame's payload is still arriving.
    var isInsideFrame: Bool { frame != nil }

    /// Reads the next event from `bytes`; `consumed` bytes of it are done with.
    mutating func read(_ bytes: UnsafeMutableRawBufferPointer) -> (consumed: Int, event: Event) {
        if frame != nil { return payload(bytes, offset: 0) }
        return header(bytes)
    }

    private mutating func header(_ bytes: UnsafeMutableRawBufferPointer) -> (consumed: Int, event: Event) {
        guard bytes.count >= 2 else { return (0, .needMore) }
        let b0 = bytes[0], b1 = bytes[1]
        let fin = b0 & 0x80 != 0
        guard b0 & 0x70 == 0 else { return fail(.protocolError, "reserved bits set without an extension") }
        guard let opcode = WebSocketOpcode(rawValue: b0 & 0x0F) else { return fail(.protocolError, "reserved opcode") }
        guard b1 & 0x80 != 0 else { return fail(.protocolError, "client frames must be masked") }

        let length7 = b1 & 0x7F
        let extra = length7 == 126 ? 2 : length7 == 127 ? 8 : 0
        let headerLength = 2 + extra + 4
        if opcode.isControl {
            guard fin else { return fail(.protocolError, "fragmented control frame") }
            guard length7 <= 125 else { return fail(.protocolError, "control frame longer than 125 bytes") }
        }
        guard bytes.count >= headerLength else { return (0, .needMore) }

        var length = UInt64(length7)
        if extra > 0 {
            length = 0
            for i in 0..<extra { length = length << 8 | UInt64(bytes[2 + i]) }
            // RFC 6455 section 5.2: the minimal length encoding MUST be used; the top bit MUST be 0.
            guard length >> 63 == 0 else { return fail(.protocolError, "frame length has its top bit set") }
            guard (extra == 2 && length >= 126) || (extra == 8 && length > 0xFFFF) else {
                return fail(.protocolError, "frame length not minimally encoded")
            }
        }
        let mask = bytes.loadUnaligned(fromByteOffset: headerLength - 4, as: UInt32.self)

        if opcode.isControl { return control(opcode, bytes, headerLength: headerLength, length: Int(length), mask: mask) }

        switch (opcode, message) {
        case (.continuation, nil): return fail(.protocolError, "continuation frame without a message")
        case (.text, .some), (.binary, .some): return fail(.protocolError, "new message before the last one finished")
        case (.text, nil): message = Message(kind: .text)
        case (.binary, nil): message = Message(kind: .binary)
        default: break
        }
        guard length <= UInt64(maxMessageBytes - message!.length) else {
            return fail(.messageTooBig, "message larger than \(maxMessageBytes) bytes")
        }
        frame = DataFrame(remaining: length, mask: mask, maskOffset: 0, fin: fin)
        return payload(bytes, offset: headerLength)
    }

    private mutating func payload(_ bytes: UnsafeMutableRawBufferPointer, offset: Int) -> (consumed: Int, event: Event) {
        let available = bytes.count - offset
        let take = Int(min(UInt64(available), frame!.remaining))
        let last = frame!.fin && UInt64(take) == frame!.remaining
        // A chunk that carries nothing and ends nothing is not worth an event.
        guard take > 0 || last || (frame!.remaining == 0) else { return (offset, .needMore) }

        let chunk = UnsafeMutableRawBufferPointer(rebasing: bytes[offset..<(offset + take)])
        Self.unmask(chunk, mask: frame!.mask, offset: Int(frame!.maskOffset))
        frame!.maskOffset = UInt8((Int(frame!.maskOffset) + take) & 3)
        frame!.remaining -= UInt64(take)
        if frame!.remaining == 0 { frame = nil }

        var m = message!
        if m.kind == .text {
            guard m.utf8.validate(UnsafeRawBufferPointer(chunk)) else { return fail(.invalidPayload, "text message is not valid UTF-8") }
            if last && !m.utf8.isComplete { return fail(.invalidPayload, "text message ends inside a UTF-8 sequence") }
        }
        let first = !m.started
        m.started = true
        m.length += take
        message = last ? nil : m
        return (offset + take, .data(m.kind, chunk, first: first, last: last))
    }

    private mutating func control(_ opcode: WebSocketOpcode, _ bytes: UnsafeMutableRawBufferPointer, headerLength: Int, length: Int, mask: UInt32) -> (consumed: Int, event: Event) {
        // Control frames are handled whole; they are at most 131 bytes.
        guard bytes.count >= headerLength + length else { return (0, .needMore) }
        let body = UnsafeMutableRawBufferPointer(rebasing: bytes[headerLength..<(headerLength + length)])
        Self.unmask(body, mask: mask, offset: 0)
        let consumed = headerLength + length
        switch opcode {
        case .ping: return (consumed, .ping(body))
        case .pong: return (consumed, .pong(body))
        default: break
        }
        if length == 0 { return (consumed, .close(.noStatus, body)) }
        guard length >= 2 else { return fail(.protocolError, "close frame with a one-byte payload") }
        let code = WebSocketCloseCode(rawValue: UInt16(body[0]) << 8 | UInt16(body[1]))
        guard code.isValidOnWire else { return fail(.protocolError, "invalid close code \(code.rawValue)") }
        let reason = UnsafeMutableRawBufferPointer(rebasing: body[2...])
        guard UTF8Validator.isValid(UnsafeRawBufferPointer(reason)) else { return fail(.invalidPayload, "close reason is not valid UTF-8") }
        return (consumed, .close(code, reason))
    }

    private mutating func fail(_ code: WebSocketCloseCode, _ reason: String) -> (consumed: Int, event: Event) {
        frame = nil
        message = nil
        return (0, .failure(code, reason))
    }

    /// XORs `bytes` with the masking key, starting `offset` bytes into the key; eight bytes a step.
    static func unmask(_ bytes: UnsafeMutableRawBufferPointer, mask: UInt32, offset: Int) {
        guard !bytes.isEmpty else { return }
        // The key as it lines up with bytes[0], in memory order.
        let shift = UInt32(offset * 8)
        let rotated = shift == 0 ? mask : (mask >> shift) | (mask << (32 - shift))
        let wide = UInt64(rotated) | UInt64(rotated) << 32
        var i = 0
        let n = bytes.count
        let base = bytes.baseAddress!
        while i + 8 <= n {
            let word = base.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            base.storeBytes(of: word ^ wide, toByteOffset: i, as: UInt64.self)
            i += 8
        }
        var key = rotated
        while i < n {
            bytes[i] ^= UInt8(truncatingIfNeeded: key)
            key = key >> 8 | key << 24
            i += 1
        }
    }
}
