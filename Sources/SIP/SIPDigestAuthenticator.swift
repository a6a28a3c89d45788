import TLS

/// The server side of digest authentication without state: a nonce is its issue time and an HMAC
/// of that time and the realm under a key of the server's, so any node holding the key can check
/// it, and it expires after `nonceLifetime` (then the answer is "stale", RFC 2617 section 3.2.1,
/// and the caller retries with the same password). Replays within the lifetime are not caught:
/// that would need state (nc tracking per nonce).
package struct SIPDigestAuthenticator: Sendable {
    package enum Verdict: Sendable, Equatable {
        case accepted
        /// The nonce was ours but has expired: challenge again with stale=true.
        case stale
        /// Wrong password, realm, algorithm, or a nonce not ours.
        case rejected
    }

    package let realm: String
    package let nonceLifetime: UInt64
    private let key: [UInt8]

    /// `key`: the HMAC key (32 random bytes, shared by the nodes that share trunks); `nonceLifetime`
    /// in seconds.
    package init(realm: String, key: [UInt8], nonceLifetime: UInt64 = 300) {
        self.realm = realm
        self.key = key
        self.nonceLifetime = nonceLifetime
    }

    /// A nonce issued at `now` (seconds, the caller's wall clock): 16 hex digits of the time,
    /// 32 of the HMAC.
    package func nonce(now: UInt64) -> String {
        let time = (0..<8).map { UInt8(truncatingIfNeeded: now >> (56 - 8 * $0)) }
        return OpenSSL.hex(time) + OpenSSL.hex(mac(time))
    }

    private func mac(_ time: [UInt8]) -> [UInt8] {
        Array(OpenSSL.hmacSHA256(key: key, time + Array(realm.utf8)).prefix(16))
    }

    package func challenge(algorithm: SIPDigestAlgorithm = .sha256, now: UInt64, stale: Bool = false) -> SIPDigestChallenge {
        SIPDigestChallenge(realm: realm, nonce: nonce(now: now), algorithm: algorithm, stale: stale)
    }

    /// One challenge per algorithm, the preferred first (RFC 8760 section 2.3: a UAS that supports
    /// several sends a WWW-Authenticate for each, in order of preference): SHA-256, then MD5, which
    /// is all that many phones and trunks (pjsip built without OpenSSL, SIPp) can answer.
    package func challenges(now: UInt64, stale: Bool = false) -> [SIPDigestChallenge] {
        let nonce = nonce(now: now)
        return [SIPDigestAlgorithm.sha256, .md5].map { SIPDigestChallenge(realm: realm, nonce: nonce, algorithm: $0, stale: stale) }
    }

    /// Checks an answer to one of our challenges for `method`, given the user's password.
    package func check(_ credentials: SIPDigestCredentials, method: String, password: String, now: UInt64) -> Verdict {
        check(credentials, method: method, ha1: SIPDigest.ha1(username: credentials.username, realm: realm, password: password, algorithm: credentials.algorithm), now: now)
    }

    /// Checks an answer given the user's HA1 (for `credentials.algorithm`). The caller compares
    /// `credentials.uri` with the Request-URI if it wants that binding (RFC 2617 section 3.2.2.5).
    package func check(_ credentials: SIPDigestCredentials, method: String, ha1: String, now: UInt64) -> Verdict {
        guard credentials.realm == realm, let issued = issueTime(credentials.nonce) else { return .rejected }
        if let qop = credentials.qop {
            guard qop.lowercased() == "auth", credentials.nc != nil, credentials.cnonce != nil else { return .rejected }
        }
        let expected = SIPDigest.response(ha1: ha1, nonce: credentials.nonce, method: method, uri: credentials.uri, qop: credentials.qop,
                                          nc: credentials.nc, cnonce: credentials.cnonce, algorithm: credentials.algorithm)
        guard OpenSSL.constantTimeEqual(Array(expected.utf8), Array(credentials.response.lowercased().utf8)) else { return .rejected }
        // A few seconds of skew between nodes; past the lifetime the password was right but the nonce is old.
        guard issued <= now &+ 5, now < issued &+ nonceLifetime else { return .stale }
        return .accepted
    }

    /// The time a nonce of ours was issued; nil when it is not one (a wrong shape or MAC).
    private func issueTime(_ nonce: String) -> UInt64? {
        let bytes = Array(nonce.utf8)
        guard bytes.count == 48 else { return nil }
        var decoded: [UInt8] = []
        decoded.reserveCapacity(24)
        var i = 0
        while i < 48 {
            guard let high = hexValue(bytes[i]), let low = hexValue(bytes[i + 1]) else { return nil }
            decoded.append(high << 4 | low)
            i += 2
        }
        let time = Array(decoded[0..<8])
        guard OpenSSL.constantTimeEqual(mac(time), Array(decoded[8...])) else { return nil }
        return time.reduce(0) { $0 << 8 | UInt64($1) }
    }

    private func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        default: nil
        }
    }
}
