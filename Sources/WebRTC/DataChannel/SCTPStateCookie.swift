import TLS

/// The State Cookie a passive endpoint puts in its INIT ACK (RFC 9260 section 5.1.3): all it
/// needs to build the association when the COOKIE ECHO comes back, signed so that it keeps no
/// state for an INIT until then (which is what defeats a flood of INITs), and timestamped so that
/// an old cookie is refused (section 5.1.5).
struct SCTPStateCookie: Equatable {
    var createdAt: UInt64
    var peerTag: UInt32
    var peerInitialTSN: UInt32
    var peerWindow: UInt32
    var peerOutboundStreams: UInt16
    var peerInboundStreams: UInt16
    var localTag: UInt32
    var localInitialTSN: UInt32
    var peerSupportsForwardTSN: Bool
    var peerSupportsReconfig: Bool

    static let version: UInt8 = 1
    static let bodyBytes = 1 + 8 + 4 * 5 + 2 * 2 + 1
    static let macBytes = 32

    enum Refusal: Error, Equatable, CustomStringConvertible {
        case malformed
        case badSignature
        /// How far past its life the cookie is, in nanoseconds (the Stale Cookie cause reports it).
        case stale(by: UInt64)

        var description: String {
            switch self {
            case .malformed: "the state cookie is not one of ours"
            case .badSignature: "the state cookie's signature does not match"
            case .stale(let by): "the state cookie expired \(by / 1_000_000) ms ago"
            }
        }
    }

    func sealed(secret: [UInt8]) -> [UInt8] {
        var writer = SCTPWriter(capacity: Self.bodyBytes + Self.macBytes)
        writer.u8(Self.version)
        writer.u64(createdAt)
        writer.u32(peerTag)
        writer.u32(peerInitialTSN)
        writer.u32(peerWindow)
        writer.u16(peerOutboundStreams)
        writer.u16(peerInboundStreams)
        writer.u32(localTag)
        writer.u32(localInitialTSN)
        writer.u8((peerSupportsForwardTSN ? 1 : 0) | (peerSupportsReconfig ? 2 : 0))
        writer.append(OpenSSL.hmacSHA256(key: secret, writer.bytes))
        return writer.bytes
    }

    init(createdAt: UInt64, peerTag: UInt32, peerInitialTSN: UInt32, peerWindow: UInt32, peerOutboundStreams: UInt16, peerInboundStreams: UInt16, localTag: UInt32, localInitialTSN: UInt32, peerSupportsForwardTSN: Bool, peerSupportsReconfig: Bool) {
        self.createdAt = createdAt
        self.peerTag = peerTag
        self.peerInitialTSN = peerInitialTSN
        self.peerWindow = peerWindow
        self.peerOutboundStreams = peerOutboundStreams
        self.peerInboundStreams = peerInboundStreams
        self.localTag = localTag
        self.localInitialTSN = localInitialTSN
        self.peerSupportsForwardTSN = peerSupportsForwardTSN
        self.peerSupportsReconfig = peerSupportsReconfig
    }

    /// Checks a cookie that came back in a COOKIE ECHO: its signature, then its age.
    init(opening bytes: [UInt8], secret: [UInt8], now: UInt64, lifetime: UInt64) throws(Refusal) {
        guard bytes.count == Self.bodyBytes + Self.macBytes, bytes[0] == Self.version else { throw .malformed }
        let expected = OpenSSL.hmacSHA256(key: secret, Array(bytes[0..<Self.bodyBytes]))
        // Compared in constant time, so the comparison does not tell a forger how much was right.
        var difference: UInt8 = 0
        for (a, b) in zip(expected, bytes[Self.bodyBytes...]) { difference |= a ^ b }
        guard difference == 0, expected.count == Self.macBytes else { throw .badSignature }
        var reader = SCTPReader(bytes, from: 1, to: Self.bodyBytes)
        do {
            createdAt = try reader.u64()
            peerTag = try reader.u32()
            peerInitialTSN = try reader.u32()
            peerWindow = try reader.u32()
            peerOutboundStreams = try reader.u16()
            peerInboundStreams = try reader.u16()
            localTag = try reader.u32()
            localInitialTSN = try reader.u32()
            let flags = try reader.u8()
            peerSupportsForwardTSN = flags & 1 != 0
            peerSupportsReconfig = flags & 2 != 0
        } catch {
            throw .malformed
        }
        let age = now >= createdAt ? now - createdAt : 0
        guard age <= lifetime else { throw .stale(by: age - lifetime) }
    }
}
