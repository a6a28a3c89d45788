import JSON
import Server
import Loop
#if canImport(Glibc)
import Glibc
#endif

/// The WebSocket client of `parley talk`: one blocking connection, enough of RFC 6455 for a
/// terminal (masked frames out, fragmented messages in, ping answered, close seen). A command-line
/// client talks to one server; it has no need of the event loops.
final class TalkSocket {
    enum Message {
        case text(String)
        case binary([UInt8])
    }

    /// Why the conversation could not go on; each kind has its exit code.
    enum Failure: Error, CustomStringConvertible {
        case connect(String)
        case refused(String)
        case closed(code: UInt16?, reason: String)
        case timedOut(Double)

        var description: String {
            switch self {
            case .connect(let why): "cannot connect: \(why)"
            case .refused(let why): "the server refused the session: \(why)"
            case .closed(let code, let reason):
                "the server closed the connection" + (code.map { " with \($0) (\(Self.meaning($0)))" } ?? " without a close frame") + (reason.isEmpty ? "" : ": \(reason)")
            case .timedOut(let seconds): "no answer within \(Int(seconds)) s"
            }
        }

        static func meaning(_ code: UInt16) -> String {
            switch code {
            case 1000: "normal closure"
            case 1001: "the server is going away"
            case 1002: "protocol error"
            case 1007: "invalid text"
            case 1008: "policy violation"
            case 1009: "message too big"
            case 1011: "server error"
            case 1012: "the server is restarting"
            case 1013: "the server is overloaded; try again later"
            default: "close code"
            }
        }
    }

    private let fd: Int32
    private var buffer: [UInt8] = []

    /// `PARLEY_API_KEY` (a server key or an `ek_` client secret), sent as a bearer token when set:
    /// from the environment, so it stays out of the process list.
    static let authorization: String = Environment.string("PARLEY_API_KEY").map { "Authorization: Bearer \($0)\r\n" } ?? ""

    /// Connects to `ws://host:port/path` and upgrades.
    init(host: String, port: Int, path: String) throws(Failure) {
        guard let addresses = try? Sys.resolve(host: host, port: port), !addresses.isEmpty else { throw .connect("cannot resolve \(host)") }
        var connected: Int32 = -1
        var lastError = ""
        for address in addresses where connected < 0 {
            guard let s = try? Sys.streamSocket(family: address.family, .blocking) else { continue }
            do {
                _ = try Sys.connect(s, to: address)
                connected = s
            } catch {
                Sys.close(s)
                lastError = SystemError.reason(error.errno)
            }
        }
        guard connected >= 0 else { throw .connect("\(host):\(port): \(lastError)") }
        fd = connected
        Sys.setNoDelay(fd)

        var nonce = [UInt8](repeating: 0, count: 16)
        for i in nonce.indices { nonce[i] = UInt8.random(in: 0...255) }
        let key = Base64.encode(nonce)
        let request = "GET \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\nUser-Agent: parley-talk\r\n"
            + Self.authorization + "\r\n"
        try write(Array(request.utf8))
        var head: [UInt8] = []
        // Once, so that a server (or a balancer) that takes the connection but never answers ends it.
        let deadline = MonotonicClock.nanoseconds() + 10_000_000_000
        while true {
            if let end = Self.find([13, 10, 13, 10], in: buffer) {
                head = Array(buffer[..<end])
                buffer.removeFirst(end + 4)
                break
            }
            guard buffer.count < 16_384 else { throw .refused("an answer head over 16 KiB") }
            guard MonotonicClock.nanoseconds() < deadline else { throw .timedOut(10) }
            try fill(deadline: deadline)
        }
        let lines = String(decoding: head, as: UTF8.self).split(separator: "\r\n")
        guard let status = lines.first, status.hasPrefix("HTTP/1.1 101") else {
            let hint = lines.first?.hasPrefix("HTTP/1.1 401") == true
                ? " (the server needs a key: set PARLEY_API_KEY to one of its keys, or to a client secret)" : ""
            throw .refused((lines.first.map(String.init) ?? "no status line") + hint)
        }
        let accept = lines.first { $0.lowercased().hasPrefix("sec-websocket-accept:") }?.split(separator: ":", maxSplits: 1).last?.trimmingSpaces()
        guard accept.map(String.init) == WebSocketHandshake.acceptKey(for: key) else { throw .refused("a wrong Sec-WebSocket-Accept") }
    }

    deinit { Glibc.close(fd) }

    func send(text: String) throws(Failure) { try send(opcode: 0x1, Array(text.utf8)) }
    func send(binary: [UInt8]) throws(Failure) { try send(opcode: 0x2, binary) }

    /// Sends a close frame (1000) and stops.
    func close() {
        try? send(opcode: 0x8, [0x03, 0xE8])
        shutdown(fd, Int32(SHUT_WR))
    }

    /// The next data message, waiting until `deadline` (monotonic ns); nil when it passed.
    func receive(until deadline: UInt64) throws(Failure) -> Message? {
        var fragments: [UInt8] = []
        var kind: UInt8 = 0
        while true {
            guard let (fin, opcode, payload) = try frame(until: deadline) else { return nil }
            switch opcode {
            case 0x9: try send(opcode: 0xA, payload)
            case 0xA: break
            case 0x8:
                let code = payload.count >= 2 ? UInt16(payload[0]) << 8 | UInt16(payload[1]) : nil
                throw .closed(code: code, reason: String(decoding: payload.dropFirst(2), as: UTF8.self))
            default:
                if opcode != 0 { kind = opcode }
                fragments += payload
                if fin { return kind == 0x1 ? .text(String(decoding: fragments, as: UTF8.self)) : .binary(fragments) }
            }
        }
    }

    private func frame(until deadline: UInt64) throws(Failure) -> (Bool, UInt8, [UInt8])? {
        func need(_ n: Int) throws(Failure) -> Bool {
            while buffer.count < n {
                guard MonotonicClock.nanoseconds() < deadline else { return false }
                try fill(deadline: deadline)
            }
            return true
        }
        guard try need(2) else { return nil }
        var length = Int(buffer[1] & 0x7F), offset = 2
        switch length {
        case 126:
            guard try need(4) else { return nil }
            length = Int(buffer[2]) << 8 | Int(buffer[3])
            offset = 4
        case 127:
            guard try need(10) else { return nil }
            length = (2..<10).reduce(0) { $0 << 8 | Int(buffer[$1]) }
            offset = 10
        default:
            break
        }
        guard length < 64 << 20 else { throw .closed(code: nil, reason: "a frame of \(length) bytes from the server") }
        guard try need(offset + length) else { return nil }
        let fin = buffer[0] & 0x80 != 0, opcode = buffer[0] & 0x0F
        let payload = Array(buffer[offset..<(offset + length)])
        buffer.removeFirst(offset + length)
        return (fin, opcode, payload)
    }

    /// Reads what the socket has, waiting at most until `deadline`.
    private func fill(deadline: UInt64) throws(Failure) {
        let now = MonotonicClock.nanoseconds()
        guard now < deadline else { return }
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = poll(&entry, 1, Int32(min(1_000, (deadline - now) / 1_000_000 + 1)))
        guard ready > 0 else { return }
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let n = read(fd, &chunk, chunk.count)
        if n > 0 { buffer += chunk[..<n] } else if n == 0 { throw .closed(code: nil, reason: "") } else if errno != EINTR && errno != EAGAIN {
            throw .closed(code: nil, reason: String(cString: strerror(errno)))
        }
    }

    private func send(opcode: UInt8, _ payload: [UInt8]) throws(Failure) {
        try write(WebSocketClientFrame.encoded(opcode: opcode, payload: payload))
    }

    private func write(_ bytes: [UInt8]) throws(Failure) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n > 0 { offset += n } else if n < 0 && errno == EINTR { continue } else {
                throw .closed(code: nil, reason: "writing: \(String(cString: strerror(errno)))")
            }
        }
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for i in 0...(haystack.count - needle.count) where haystack[i..<(i + needle.count)].elementsEqual(needle) { return i }
        return nil
    }
}
