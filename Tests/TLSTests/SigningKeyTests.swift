import Testing
import TLS

/// The keys JSON Web Tokens are signed and checked with: a signature verifies with the public half
/// of its own key only, over its own message only, and keys that are not keys are refused.
@Suite struct SigningKeyTests {
    @Test(arguments: [SignatureScheme.es256, .rs256])
    func aSignatureVerifiesWithItsOwnPublicKeyOverItsOwnMessage(scheme: SignatureScheme) throws {
        let key = try PrivateKey(generating: scheme)
        let message = Array("header.payload".utf8)
        let signature = try key.sign(message)
        let publicKey = try PublicKey(pem: Array(key.publicPEM.utf8))
        #expect(publicKey.scheme == scheme)
        #expect(publicKey.verify(signature, of: message))
        #expect(!publicKey.verify(signature, of: Array("header.payloaD".utf8)))
        let stranger = try PublicKey(pem: Array(PrivateKey(generating: scheme).publicPEM.utf8))
        #expect(!stranger.verify(signature, of: message))
    }

    @Test func aPrivateKeyRoundTripsThroughItsPEM() throws {
        let key = try PrivateKey(generating: .es256)
        let again = try PrivateKey(pem: Array(key.privatePEM.utf8))
        let message = Array("m".utf8)
        #expect(try PublicKey(pem: Array(key.publicPEM.utf8)).verify(again.sign(message), of: message))
    }

    @Test func textThatIsNotAKeyIsRefused() {
        #expect(throws: TLSError.self) { try PublicKey(pem: Array("-----BEGIN PUBLIC KEY-----\nnot base64\n-----END PUBLIC KEY-----\n".utf8)) }
        #expect(throws: TLSError.self) { try PrivateKey(pem: Array("nothing".utf8)) }
    }

    @Test func digestsAndMACsMatchTheirPublishedVectors() {
        // FIPS 180-2 "abc"; RFC 4231 test case 2.
        #expect(OpenSSL.hex(OpenSSL.sha256(Array("abc".utf8))) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(OpenSSL.hex(OpenSSL.hmacSHA256(key: Array("Jefe".utf8), Array("what do ya want for nothing?".utf8)))
                == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        #expect(OpenSSL.constantTimeEqual([1, 2, 3], [1, 2, 3]) && !OpenSSL.constantTimeEqual([1, 2, 3], [1, 2, 4]))
    }
}
