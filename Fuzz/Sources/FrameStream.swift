@testable import Server

/// WebSocket frames read the way a connection reads them (`WebSocketProtocol.process`): the reader is given
/// what is held over from the last read followed by the new bytes, payload chunks are joined into
/// messages, and reading stops at a close or a failure. Checks what the connection relies on:
/// - what the reader leaves unconsumed, which the connection holds, is at most 131 bytes (a
///   control frame whole, or a frame header);
/// - no message grows past `maxMessageBytes`, and chunks are marked first and last consistently;
/// - every text message and close reason it lets through is valid UTF-8 (by the standard library's
///   validator, independent of `UTF8Validator`).
struct FrameStream {
    /// Small, so that inputs of a few KB reach the limit; the server's default is 1 MiB.
    static let maxMessageBytes = 1000
    /// A control frame with a 125-byte payload and its 6-byte masked header.
    static let maxHeldBytes = 131

    private var reader = WebSocketFrameReader(maxMessageBytes: maxMessageBytes)
    private var held: [UInt8] = []
    private var message: [UInt8] = []
    private var kind: WebSocketMessageKind?
    private(set) var ended = false

    mutating func receive(_ read: UnsafeRawBufferPointer) {
        guard !ended else { return }
        var bytes = held + read
        let consumed = bytes.withUnsafeMutableBytes { process($0) }
        held = Array(bytes[consumed...])
        precondition(ended || held.count <= Self.maxHeldBytes, "the reader left \(held.count) bytes unconsumed")
    }

    private mutating func process(_ bytes: UnsafeMutableRawBufferPointer) -> Int {
        var offset = 0
        while !ended {
            let (consumed, event) = reader.read(UnsafeMutableRawBufferPointer(rebasing: bytes[offset...]))
            precondition(consumed <= bytes.count - offset, "consumed \(consumed) of \(bytes.count - offset) bytes")
            offset += consumed
            switch event {
            case .needMore:
                return offset
            case .data(let chunkKind, let chunk, let first, let last):
                precondition(first == (kind == nil) && (kind ?? chunkKind) == chunkKind, "a chunk out of its message")
                kind = last ? nil : chunkKind
                message += chunk
                precondition(message.count <= Self.maxMessageBytes, "a \(message.count)-byte message passed the limit")
                if last {
                    precondition(chunkKind == .binary || Self.isUTF8(message), "a text message that is not UTF-8 got through")
                    message = []
                }
            case .ping(let payload), .pong(let payload):
                precondition(payload.count <= 125, "a \(payload.count)-byte control frame")
            case .close(let code, let reason):
                precondition(code == .noStatus || code.isValidOnWire, "close code \(code) got through")
                precondition(Self.isUTF8(Array(reason)), "a close reason that is not UTF-8 got through")
                ended = true
            case .failure:
                ended = true
            }
            if offset == bytes.count && !reader.isInsideFrame { return offset }
        }
        return bytes.count
    }

    static func isUTF8(_ bytes: [UInt8]) -> Bool { String(validating: bytes, as: UTF8.self) != nil }
}
