import Testing
@testable import WebRTC

struct CRC32Tests {
    /// The check values every CRC catalogue gives for the nine ASCII digits "123456789".
    @Test func theCatalogueCheckValues() {
        let digits = Array("123456789".utf8)
        #expect(CRC32.ieee.checksum(digits) == 0xCBF4_3926)
        #expect(CRC32.castagnoli.checksum(digits) == 0xE306_9283)
    }

    /// RFC 3720 appendix B.4: 32 bytes of zeros under CRC-32C.
    @Test func iSCSIsZerosUnderCastagnoli() {
        #expect(CRC32.castagnoli.checksum([UInt8](repeating: 0, count: 32)) == 0x8A91_36AA)
    }
}
