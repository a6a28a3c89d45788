import JSON
import Server
import Loop
#if canImport(Glibc)
import Glibc
#endif

/// Client side of the opening handshake (RFC 6455 section 4.1): the GET that asks for the upgrade,
/// and the reading of the server's answer.
struct UpgradeHandshake {
    /// A response head longer than this is not a WebSocket server answering.
    static let maxHeadBytes = 8192

    /// The random Sec-WebSocket-Key, base64 of 16 bytes.
    let key: String

    init(random: inout FastRandom) {
        var bytes = [UInt8](repeating: 0, count: 16)
        for i in 0..<16 { bytes[i] = UInt8.random(in: 0...255, using: &random) }
        key = Base64.encode(bytes)
    }

    /// `PARLEY_LOAD_API_KEY`, sent as `Authorization: Bearer` when set: from the environment, so
    /// that it stays out of the process list and the worker processes inherit it.
    static let authorization: String = getenv("PARLEY_LOAD_API_KEY").map { "Authorization: Bearer \(String(cString: $0))\r\n" } ?? ""

    /// `offeredKey`: a key presented as a browser does, in the `openai-insecure-api-key.<key>`
    /// subprotocol beside `realtime`, in place of the bearer header (which the server would read
    /// first).
    func request(for target: LoadTarget, path: String? = nil, offeredKey: String? = nil) -> [UInt8] {
        let credential = offeredKey.map { "Sec-WebSocket-Protocol: realtime, openai-insecure-api-key.\($0)\r\n" } ?? Self.authorization
        return Array(("GET \(path ?? target.path) HTTP/1.1\r\n"
            + "Host: \(target.hostHeader)\r\n"
            + "Upgrade: websocket\r\n"
            + "Connection: Upgrade\r\n"
            + "Sec-WebSocket-Key: \(key)\r\n"
            + "Sec-WebSocket-Version: 13\r\n"
            + credential
            + "User-Agent: parley-load\r\n\r\n").utf8)
    }

    /// What the server must send back as Sec-WebSocket-Accept.
    var expectedAccept: String { WebSocketHandshake.acceptKey(for: key) }

    enum Answer: Equatable {
        /// The head is not complete yet.
        case needMore
        /// 101 with the right accept key; the WebSocket begins `headLength` bytes in.
        case upgraded(headLength: Int)
        /// Why the upgrade did not happen, as a failure reason (e.g. "HTTP 503").
        case refused(String)
    }

    /// Reads the server's response head from the bytes received so far.
    func answer(_ bytes: UnsafeRawBufferPointer) -> Answer {
        guard let end = Self.headEnd(bytes) else {
            return bytes.count > Self.maxHeadBytes ? .refused("response head too large") : .needMore
        }
        let head = String(decoding: bytes[0..<end], as: UTF8.self)
        let lines = head.split(separator: "\r\n", omittingEmptySubsequences: false)
        let statusParts = lines[0].split(separator: " ", maxSplits: 2)
        guard statusParts.count >= 2, statusParts[0].hasPrefix("HTTP/1."), let status = Int(statusParts[1]) else {
            return .refused("not an HTTP response")
        }
        guard status == 101 else { return .refused("HTTP \(status)") }
        var accept: Substring?
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            if line[..<colon].lowercased() == "sec-websocket-accept" {
                accept = line[line.index(after: colon)...].drop { $0 == " " || $0 == "\t" }
            }
        }
        guard let accept else { return .refused("101 without Sec-WebSocket-Accept") }
        guard accept.trimmingSuffix(while: { $0 == " " || $0 == "\t" }) == expectedAccept else {
            return .refused("wrong Sec-WebSocket-Accept")
        }
        return .upgraded(headLength: end + 4)
    }

    /// Offset of the blank line's "\r\n\r\n".
    private static func headEnd(_ bytes: UnsafeRawBufferPointer) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for i in 0...(bytes.count - 4)
        where bytes[i] == 0x0D && bytes[i + 1] == 0x0A && bytes[i + 2] == 0x0D && bytes[i + 3] == 0x0A {
            return i
        }
        return nil
    }
}

private extension Substring {
    func trimmingSuffix(while predicate: (Character) -> Bool) -> Substring {
        var end = endIndex
        while end > startIndex, predicate(self[index(before: end)]) { end = index(before: end) }
        return self[startIndex..<end]
    }
}
