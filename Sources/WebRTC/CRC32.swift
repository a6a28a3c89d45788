/// The two 32-bit cyclic redundancy checks WebRTC's packets carry, table-driven, in their reflected
/// (least significant bit first) form: STUN's FINGERPRINT uses the IEEE 802.3 polynomial (RFC 8489
/// section 14.7, with the result XORed with 0x5354554e), SCTP's common header the Castagnoli one
/// (RFC 9260 appendix A), which catches more of the errors a lower layer's CRC misses.
struct CRC32: Sendable {
    private let table: [UInt32]

    /// The IEEE 802.3 polynomial (0x04C11DB7, reflected 0xEDB88320): zlib's `crc32`.
    static let ieee = CRC32(reflectedPolynomial: 0xEDB8_8320)
    /// Castagnoli's polynomial (0x1EDC6F41, reflected 0x82F63B78): CRC-32C.
    static let castagnoli = CRC32(reflectedPolynomial: 0x82F6_3B78)

    private init(reflectedPolynomial: UInt32) {
        table = (0..<256).map { index in
            var crc = UInt32(index)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ reflectedPolynomial : crc >> 1 }
            return crc
        }
    }

    /// The checksum of `bytes`: initial value all ones, final value inverted, as both RFCs use it.
    func checksum(_ bytes: some Sequence<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return ~crc
    }
}
