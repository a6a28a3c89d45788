import TLS

/// An ICE username fragment and password (RFC 8445 section 5.3), as an SDP's a=ice-ufrag and
/// a=ice-pwd carry them. Ours are random; the browser's come from its offer.
package struct ICECredentials: Equatable, Sendable {
    package var ufrag: String
    package var password: String

    init(ufrag: String, password: String) {
        self.ufrag = ufrag
        self.password = password
    }

    /// RFC 8839 section 5.4's ice-char: ALPHA / DIGIT / "+" / "/". Sixty-four of them, so a random
    /// byte's low six bits pick one with no bias.
    static let iceChars = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// RFC 8445 section 5.3 asks for at least 24 bits of randomness in a ufrag and 128 in a password.
    /// Ours carry 48 and 144 (8 and 24 characters): the ufrag is also the key that finds a call on
    /// the loop's shared port, so it is made long enough that two live calls practically never
    /// draw the same one.
    static let ufragCharacters = 8
    static let passwordCharacters = 24

    package static func generate() -> ICECredentials {
        ICECredentials(ufrag: randomIceChars(ufragCharacters), password: randomIceChars(passwordCharacters))
    }

    private static func randomIceChars(_ count: Int) -> String {
        String(decoding: OpenSSL.randomBytes(count).map { iceChars[Int($0 & 63)] }, as: UTF8.self)
    }

    /// True when the text is 1 to 256 ice-chars, the bounds RFC 8839 section 5.4 sets (ufrag at least
    /// 4, password at least 22 characters are what it asks of a sender, not what a receiver checks).
    static func isIceCharString(_ text: String) -> Bool {
        let bytes = text.utf8
        return (1...256).contains(bytes.count) && bytes.allSatisfy { iceChars.contains($0) }
    }
}
