import JSON
import Loop
import TLS

/// A resume token: 144 random bits from OpenSSL's generator, base64url, `rt_` in front. Only its
/// SHA-256 is kept (in memory and in the store), so neither a heap dump nor a leaked store gives
/// anyone a way in; each reconnect uses one up and hands out the next.
struct ResumeToken: Sendable, Equatable {
    let value: String

    static func make() -> ResumeToken {
        ResumeToken(value: "rt_" + Base64.encodeURL(OpenSSL.randomBytes(18)))
    }

    var hash: String { Self.hash(value) }

    static func hash(_ token: String) -> String {
        OpenSSL.hex(OpenSSL.sha256(Array(token.utf8)))
    }

    /// What a well-formed token looks like; anything else is refused before any lookup.
    static func isWellFormed(_ text: String) -> Bool {
        text.utf8.count == 27 && text.hasPrefix("rt_")
            && text.utf8.dropFirst(3).allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x2D || byte == 0x5F
            }
    }
}
