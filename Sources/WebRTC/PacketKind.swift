/// What a datagram on a WebRTC port carries, told from its first byte alone: STUN, DTLS and
/// SRTP/SRTCP share the one 5-tuple (RFC 8842, bundled with rtcp-mux), so the demultiplexing is
/// RFC 7983 section 7's table, in the order the ranges are tested there.
package enum PacketKind: Equatable, Sendable {
    /// 0–3: STUN's first two bits are zero (RFC 8489 section 5).
    case stun
    /// 20–63: a DTLS record's content type.
    case dtls
    /// 128–191: RTP or RTCP version 2, protected by SRTP or SRTCP.
    case rtp
    /// Anything else: ZRTP (16–19), TURN channels (64–79) and the unassigned ranges, none of
    /// which Parley speaks; RFC 7983 says such packets are dropped.
    case drop

    package static func classify(_ firstByte: UInt8) -> PacketKind {
        switch firstByte {
        case 0...3: .stun
        case 20...63: .dtls
        case 128...191: .rtp
        default: .drop
        }
    }
}
