import Testing
import TLS
@testable import Server

/// The WebSocket accept key's SHA-1, in Swift so that plain ws never wakes OpenSSL: RFC 3174's
/// vectors, block-boundary lengths, and OpenSSL's digest of random messages.
@Suite struct SHA1Tests {
    func hex(_ bytes: [UInt8]) -> String { OpenSSL.hex(bytes) }

    @Test func rfc3174Vectors() {
        #expect(hex(SHA1.digest(Array("abc".utf8))) == "a9993e364706816aba3e25717850c26c9cd0d89d")
        #expect(hex(SHA1.digest(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))) == "84983e441c3bd26ebaae4aa1f95129e5e54670f1")
        #expect(hex(SHA1.digest([UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000))) == "34aa973cd4c4daa4f61eeb2bdbad27316534016f")
        let repeated = Array(String(repeating: "0123456701234567012345670123456701234567012345670123456701234567", count: 10).utf8)
        #expect(hex(SHA1.digest(repeated)) == "dea356a2cddd90c7a7ecedc5ebb563934f460452")
        #expect(hex(SHA1.digest([])) == "da39a3ee5e6b4b0d3255bfef95601890afd80709")
    }

    /// RFC 6455 section 1.3's example handshake.
    @Test func theRFC6455AcceptKey() {
        #expect(WebSocketHandshake.acceptKey(for: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }

    @Test func agreesWithOpenSSL() {
        var generator = SystemRandomNumberGenerator()
        // Every length across the padding's edges (55, 56, 63, 64 bytes and their multiples), then random ones.
        let lengths = Array(0...200) + (0..<200).map { _ in Int.random(in: 0...5_000, using: &generator) }
        for length in lengths {
            let message = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            #expect(SHA1.digest(message) == OpenSSL.sha1(message), "length \(length)")
        }
    }
}
