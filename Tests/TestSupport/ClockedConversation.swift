import Codec
import JSON
import Loop

/// A WebSocket session on a server whose loop runs on a test's clock (`TestClock`: a `ManualClock`
/// in this process, or a `parley serve --test-clock` child's; issue 50).
///
/// Time moves only when the test moves it, and only once the server has read everything sent and
/// finished the work it waits on (a decode, a synthesis, an encode): so a decision (a reply cut or
/// not, one turn or two) rests on what was said and when, never on how busy the CPU was, and a
/// minute of audio takes as long as its work, not a minute.
///
/// Every `advance` ends with a barrier: a ping, and the frames the server wrote before its pong,
/// kept in `events` and `binary` in the order they came.
public final class ClockedConversation {
    public let clock: any TestClock
    public let client: TestClient
    public private(set) var events: [JSON] = []
    /// When each of `events` came, in the test clock's milliseconds (`elapsedMs` at the barrier
    /// that read it: at most one step late).
    public private(set) var eventTimes: [Int] = []
    public private(set) var binary: [[UInt8]] = []
    /// Milliseconds the test has moved the clock since the conversation began.
    public private(set) var elapsedMs = 0
    private var pings = 0

    public struct Stalled: Error, CustomStringConvertible {
        public let description: String
        public init(description: String) { self.description = description }
    }

    /// `clock` must be the one the server's (one) loop runs on: `TestServer(clock:)`.
    public convenience init(server: TestServer, clock: ManualClock, path: String) throws {
        let client = try server.client()
        let status = try client.upgrade(path: path).status
        guard status == 101 else { throw Stalled(description: "the upgrade to \(path) was answered \(status)") }
        try self.init(client: client, clock: clock)
    }

    /// A WebSocket `client` has already opened (any endpoint: the barrier is the protocol's own ping).
    public init(client: TestClient, clock: any TestClock) throws {
        self.clock = clock
        self.client = client
        // Each step is a few small writes answered at once: Nagle's wait for an ACK (delayed up
        // to 40 ms) would be most of a step's time.
        Sys.setNoDelay(client.fd)
        try advance(milliseconds: 0)
    }

    public func send(_ event: String) throws {
        try client.send(TestClient.frame(0x1, Array(event.utf8)))
    }

    /// Sends `samples` (pcm16 at the session's rate) as `input_audio_buffer.append` events of
    /// `chunkMs`, moving the clock `chunkMs` after each, as a microphone would.
    public func stream(_ samples: [Int16], rate: Int = 24_000, chunkMs: Int = 20) throws {
        let chunk = rate * chunkMs / 1000
        for start in stride(from: 0, to: samples.count, by: chunk) {
            let piece = Array(samples[start..<min(samples.count, start + chunk)])
            try send(#"{"type":"input_audio_buffer.append","audio":"\#(Base64.encode(PCM.littleEndianBytes(piece)))"}"#)
            try advance(milliseconds: chunkMs)
        }
    }

    /// Moves the clock on by `milliseconds` once the server has read what was sent, and collects
    /// what it wrote meanwhile.
    public func advance(milliseconds: Int) throws {
        try barrier()
        guard clock.advance(milliseconds: milliseconds) else {
            throw Stalled(description: "the server's loop did not settle within 60 s of real time at \(elapsedMs) ms (work that never answered)")
        }
        elapsedMs += milliseconds
        try barrier()
    }

    /// Moves the clock in steps of `stepMs` until an event of `type` has come (after the first
    /// `after` events), at most `withinMs`; that event.
    @discardableResult
    public func advance(until type: String, after: Int = 0, stepMs: Int = 20, withinMs: Int) throws -> JSON {
        var waited = 0
        while true {
            if let found = first(type, after: after) { return events[found] }
            guard waited < withinMs else {
                throw Stalled(description: "no \(type) within \(withinMs) ms of the test's clock; came: \(types.suffix(30))")
            }
            try advance(milliseconds: stepMs)
            waited += stepMs
        }
    }

    public var types: [String] { events.map { $0["type"]?.string ?? "?" } }

    /// The index in `events` of the first of `type` after the first `after`.
    public func first(_ type: String, after: Int = 0) -> Int? {
        events.indices.dropFirst(after).first { events[$0]["type"]?.string == type }
    }

    /// A ping, and every frame before its pong: the server has read all that was sent before it.
    private func barrier() throws {
        pings += 1
        let token = Array("clock-\(pings)".utf8)
        try client.send(TestClient.frame(0x9, token))
        while true {
            let frame = try client.readFrame()
            switch frame.opcode {
            case 0xA where frame.payload == token: return
            case 0xA: continue
            case 0x9: try client.send(TestClient.frame(0xA, frame.payload))
            case 0x2: binary.append(frame.payload)
            case 0x1:
                events.append(try JSON(parsing: String(decoding: frame.payload, as: UTF8.self)))
                eventTimes.append(elapsedMs)
            case 0x8: throw Stalled(description: "the server closed the session: \(frame.payload.count >= 2 ? Int(frame.payload[0]) << 8 | Int(frame.payload[1]) : 0)")
            default: continue
            }
        }
    }
}
