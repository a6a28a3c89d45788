import JSON

/// Reading a session's events (JSON text messages) and audio (binary messages) from a test client.
extension TestClient {
    /// The next message, which must be a text event.
    public func readEvent() throws -> JSON {
        let frame = try readFrame()
        guard frame.opcode == 0x1 else { throw EventError(description: "expected a text event, got opcode \(frame.opcode)") }
        return try JSON(parsing: String(decoding: frame.payload, as: UTF8.self))
    }

    /// Events up to and including the first of type `last`; binary messages met on the way are kept
    /// apart, in order.
    public func readEvents(until last: String) throws -> (events: [JSON], binary: [[UInt8]]) {
        var events: [JSON] = [], binary: [[UInt8]] = []
        while events.last?["type"]?.string != last {
            let frame = try readFrame()
            if frame.opcode == 0x2 { binary.append(frame.payload); continue }
            events.append(try JSON(parsing: String(decoding: frame.payload, as: UTF8.self)))
        }
        return (events, binary)
    }

    public struct EventError: Error, CustomStringConvertible {
        public let description: String
    }
}
