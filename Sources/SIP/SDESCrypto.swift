import JSON
import Media
import TLS

/// One SDP `a=crypto` attribute (RFC 4568 section 9.1), SDES: the SRTP master key and salt the
/// side whose SDP it is sends with, given in the clear inside that SDP, which is why Parley takes
/// and gives it only on calls signalled over TLS. Parley speaks one suite,
/// AES_CM_128_HMAC_SHA1_80 (RFC 4568 section 6.2.1, every SDES phone's and trunk's default, and
/// OpenAI's SIP trunking's), one key, no MKI, no session parameters; a line with anything else is
/// not taken, and the offer's next line is tried.
///
/// `a=crypto:<tag> AES_CM_128_HMAC_SHA1_80 inline:<base64 of 16 key + 14 salt bytes>[|2^31]`
package struct SDESCrypto: Equatable, Sendable {
    package static let suite = "AES_CM_128_HMAC_SHA1_80"
    package static let keyAndSaltBytes = 30

    /// The tag that pairs an answer's line with the offer's it accepts (section 5.1).
    package let tag: Int
    /// Master key ‖ salt, as libsrtp2 takes it.
    package let keyAndSalt: [UInt8]

    package init?(tag: Int, keyAndSalt: [UInt8]) {
        guard (0...999_999_999).contains(tag), keyAndSalt.count == Self.keyAndSaltBytes else { return nil }
        self.tag = tag
        self.keyAndSalt = keyAndSalt
    }

    /// A fresh key of our own, for an offer or the answer to the offer's `tag`.
    package static func fresh(tag: Int = 1) -> SDESCrypto {
        SDESCrypto(tag: tag, keyAndSalt: OpenSSL.randomBytes(keyAndSaltBytes))!
    }

    /// The attribute's value (after `crypto:`); nil for anything Parley does not speak.
    package init?(attribute value: String) {
        let fields = value.split(separator: " ", omittingEmptySubsequences: true)
        // Session parameters (UNENCRYPTED_SRTP, KDR, …: section 6.3) would change what the key means.
        guard fields.count == 3, let tag = Int(fields[0]), fields[1] == Substring(Self.suite), fields[2].hasPrefix("inline:") else { return nil }
        let keyParameters = fields[2].dropFirst("inline:".count)
        // One key: several (`;`-separated, section 9.2) are for rekeying, which Parley does not do.
        guard !keyParameters.contains(";") else { return nil }
        let parts = keyParameters.split(separator: "|", omittingEmptySubsequences: false)
        // An MKI (a third part, `1:4`) would add bytes to every packet; a lifetime is allowed.
        guard (1...2).contains(parts.count), let key = Base64.decode(parts[0].utf8) else { return nil }
        if parts.count == 2, !Self.isLifetime(parts[1]) { return nil }
        self.init(tag: tag, keyAndSalt: key)
    }

    /// `2^31` or a number: the key's lifetime in packets (section 6.1); Parley's calls end long before.
    private static func isLifetime(_ text: Substring) -> Bool {
        text.hasPrefix("2^") ? Int(text.dropFirst(2)).map { (1...48).contains($0) } ?? false : Int(text) != nil
    }

    package var attribute: String { "\(tag) \(Self.suite) inline:\(Base64.encode(keyAndSalt))" }

    /// The first line of `section` Parley speaks.
    package static func first(in section: MediaDescription) -> SDESCrypto? {
        section.attributes.lazy.filter { $0.name == "crypto" }.compactMap { $0.value.flatMap(SDESCrypto.init(attribute:)) }.first
    }
}
