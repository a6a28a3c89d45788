/// Server-sent events (the WHATWG "text/event-stream" format) from body bytes in any pieces:
/// `data:` lines accumulate, `event:` names the event, a blank line dispatches, `:` lines are
/// comments. Pure; bounded, so a stream that never dispatches cannot grow without limit.
public struct ServerSentEventParser {
    public struct Event: Equatable, Sendable {
        /// The `event:` field; "message" when absent.
        public let name: String
        public let data: String
    }

    public enum Failure: Error, Equatable {
        case eventTooLarge
    }

    public let maxEventBytes: Int
    private var line: [UInt8] = []
    private var data: [UInt8] = []
    private var hasData = false
    private var name = ""
    private var lastWasCR = false

    public init(maxEventBytes: Int = 1 << 20) {
        self.maxEventBytes = maxEventBytes
    }

    /// Feeds bytes; returns the events they complete.
    public mutating func feed(_ bytes: UnsafeRawBufferPointer) throws(Failure) -> [Event] {
        var events: [Event] = []
        for byte in bytes {
            // Lines end in CRLF, LF or CR; a CR then LF is one ending.
            if byte == 10 && lastWasCR { lastWasCR = false; continue }
            lastWasCR = byte == 13
            if byte == 10 || byte == 13 {
                if let event = endLine() { events.append(event) }
                continue
            }
            line.append(byte)
            guard line.count + data.count <= maxEventBytes else { throw .eventTooLarge }
        }
        return events
    }

    public mutating func feed(_ text: String) throws(Failure) -> [Event] {
        try Array(text.utf8).withUnsafeBytes { bytes in Result { () throws(Failure) in try feed(bytes) } }.get()
    }

    private mutating func endLine() -> Event? {
        defer { line.removeAll(keepingCapacity: true) }
        if line.isEmpty {
            defer { data.removeAll(); hasData = false; name = "" }
            return hasData ? Event(name: name.isEmpty ? "message" : name, data: String(decoding: data, as: UTF8.self)) : nil
        }
        if line.first == UInt8(ascii: ":") { return nil }
        let colon = line.firstIndex(of: UInt8(ascii: ":")) ?? line.endIndex
        let field = String(decoding: line[..<colon], as: UTF8.self)
        var value = colon < line.endIndex ? line[(colon + 1)...] : []
        if value.first == UInt8(ascii: " ") { value = value.dropFirst() }
        switch field {
        case "data":
            if hasData { data.append(10) }
            data += value
            hasData = true
        case "event":
            name = String(decoding: value, as: UTF8.self)
        default:
            break  // id, retry: not used by LLM streams
        }
        return nil
    }
}
