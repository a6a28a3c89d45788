import Testing
@testable import WebRTC

struct PacketKindTests {
    /// RFC 7983 section 7's ranges, at each edge.
    @Test func theFirstByteSortsSTUNDTLSAndRTPAndDropsTheRest() {
        #expect([0, 3].map(PacketKind.classify) == [.stun, .stun])
        #expect([20, 63].map(PacketKind.classify) == [.dtls, .dtls])
        #expect([128, 191].map(PacketKind.classify) == [.rtp, .rtp])
        #expect([4, 16, 19, 64, 79, 127, 192, 255].map(PacketKind.classify).allSatisfy { $0 == .drop })
    }
}
