import TLS

/// HTTP digest authentication as SIP uses it (RFC 3261 section 22.4, RFC 2617, RFC 8760 for
/// SHA-256): the hashes, and the WWW-Authenticate / Authorization values.
package enum SIPDigestAlgorithm: String, Sendable, Equatable, CaseIterable {
    case md5 = "MD5"
    case sha256 = "SHA-256"

    /// Lower-case hex of the digest of `text`.
    package func hash(_ text: String) -> String {
        let bytes = Array(text.utf8)
        return OpenSSL.hex(self == .md5 ? OpenSSL.md5(bytes) : OpenSSL.sha256(bytes))
    }
}

package enum SIPDigest {
    /// HA1 = H(username ":" realm ":" password) (RFC 2617 section 3.2.2.2): what a trunk's secret
    /// may be stored as instead of the password.
    package static func ha1(username: String, realm: String, password: String, algorithm: SIPDigestAlgorithm) -> String {
        algorithm.hash("\(username):\(realm):\(password)")
    }

    /// request-digest (RFC 2617 section 3.2.2.1): with qop=auth,
    /// H(HA1:nonce:nc:cnonce:qop:HA2); without qop (RFC 2069), H(HA1:nonce:HA2); HA2 = H(method:uri).
    package static func response(ha1: String, nonce: String, method: String, uri: String, qop: String?, nc: String?, cnonce: String?,
                                 algorithm: SIPDigestAlgorithm) -> String {
        let ha2 = algorithm.hash("\(method):\(uri)")
        if let qop {
            return algorithm.hash("\(ha1):\(nonce):\(nc ?? ""):\(cnonce ?? ""):\(qop):\(ha2)")
        }
        return algorithm.hash("\(ha1):\(nonce):\(ha2)")
    }

    /// `Digest a=b, c="d"` split into its scheme and parameters (quotes removed, names in lower
    /// case); nil when it is not that shape.
    static func parseParameters(_ value: String) -> (scheme: String, parameters: [String: String])? {
        var scanner = SIPScanner(value)
        scanner.skipWhitespace()
        guard let scheme = scanner.token() else { return nil }
        scanner.skipWhitespace()
        var parameters: [String: String] = [:]
        repeat {
            guard let name = scanner.token(), scanner.separator(UInt8(ascii: "=")) else { return nil }
            let value: String
            if let quoted = scanner.quotedString() {
                value = SIPGrammar.unquote(quoted)
            } else if let token = scanner.token() {
                value = token
            } else {
                return nil
            }
            parameters[name.lowercased()] = value
        } while scanner.separator(UInt8(ascii: ","))
        scanner.skipWhitespace()
        guard scanner.atEnd else { return nil }
        return (scheme, parameters)
    }
}

/// A WWW-Authenticate (or Proxy-Authenticate) digest challenge.
package struct SIPDigestChallenge: Sendable, Equatable {
    package var realm: String
    package var nonce: String
    package var algorithm: SIPDigestAlgorithm
    package var opaque: String?
    /// The nonce was good but old: the client may retry with the same password (RFC 2617 3.2.1).
    package var stale: Bool
    /// Whether it offers qop "auth" (RFC 2617 section 3.2.1); a challenge without a qop is
    /// answered in RFC 2069's form, with no nc or cnonce.
    package var offersAuth: Bool

    package init(realm: String, nonce: String, algorithm: SIPDigestAlgorithm, opaque: String? = nil, stale: Bool = false, offersAuth: Bool = true) {
        self.realm = realm
        self.nonce = nonce
        self.algorithm = algorithm
        self.opaque = opaque
        self.stale = stale
        self.offersAuth = offersAuth
    }

    package init?(_ value: String) {
        guard let (scheme, parameters) = SIPDigest.parseParameters(value), scheme.lowercased() == "digest",
              let realm = parameters["realm"], let nonce = parameters["nonce"],
              let algorithm = SIPDigestAlgorithm(rawValue: parameters["algorithm"]?.uppercased() ?? "MD5") else { return nil }
        let qops = parameters["qop"]?.lowercased().split(separator: ",").map { String($0.filter { $0 != " " && $0 != "\t" }) } ?? []
        self.init(realm: realm, nonce: nonce, algorithm: algorithm, opaque: parameters["opaque"], stale: parameters["stale"]?.lowercased() == "true",
                  offersAuth: qops.contains("auth"))
    }

    /// The header value: always qop="auth" (RFC 8760 section 2.4 requires a qop).
    package var headerValue: String {
        var text = "Digest realm=\(SIPGrammar.quote(realm)), nonce=\(SIPGrammar.quote(nonce)), algorithm=\(algorithm.rawValue), qop=\"auth\""
        if let opaque { text += ", opaque=\(SIPGrammar.quote(opaque))" }
        if stale { text += ", stale=true" }
        return text
    }
}

/// An Authorization (or Proxy-Authorization) digest answer.
package struct SIPDigestCredentials: Sendable, Equatable {
    package var username: String
    package var realm: String
    package var nonce: String
    package var uri: String
    package var response: String
    package var algorithm: SIPDigestAlgorithm
    package var qop: String?
    package var nc: String?
    package var cnonce: String?
    package var opaque: String?

    package init(username: String, realm: String, nonce: String, uri: String, response: String, algorithm: SIPDigestAlgorithm = .md5,
                 qop: String? = nil, nc: String? = nil, cnonce: String? = nil, opaque: String? = nil) {
        self.username = username
        self.realm = realm
        self.nonce = nonce
        self.uri = uri
        self.response = response
        self.algorithm = algorithm
        self.qop = qop
        self.nc = nc
        self.cnonce = cnonce
        self.opaque = opaque
    }

    /// Parley's answer to `challenge`, for `method` on `uri` (RFC 3261 section 22.4; MD5 or RFC
    /// 8760's SHA-256): a trunk's challenge to a call out or a registration.
    package static func answering(_ challenge: SIPDigestChallenge, method: String, uri: String, username: String, password: String,
                                  cnonce: String) -> SIPDigestCredentials {
        let ha1 = SIPDigest.ha1(username: username, realm: challenge.realm, password: password, algorithm: challenge.algorithm)
        let qop = challenge.offersAuth ? "auth" : nil
        let nc = qop.map { _ in "00000001" }
        return SIPDigestCredentials(username: username, realm: challenge.realm, nonce: challenge.nonce, uri: uri,
                                    response: SIPDigest.response(ha1: ha1, nonce: challenge.nonce, method: method, uri: uri, qop: qop, nc: nc,
                                                                 cnonce: qop.map { _ in cnonce }, algorithm: challenge.algorithm),
                                    algorithm: challenge.algorithm, qop: qop, nc: nc, cnonce: qop.map { _ in cnonce }, opaque: challenge.opaque)
    }

    /// Parses the header value; nil when it is not a digest answer with the fields every answer
    /// carries (RFC 2617 section 3.2.2), or names an algorithm Parley does not offer.
    package init?(_ value: String) {
        guard let (scheme, p) = SIPDigest.parseParameters(value), scheme.lowercased() == "digest",
              let username = p["username"], let realm = p["realm"], let nonce = p["nonce"], let uri = p["uri"], let response = p["response"],
              let algorithm = SIPDigestAlgorithm(rawValue: p["algorithm"]?.uppercased() ?? "MD5") else { return nil }
        self.init(username: username, realm: realm, nonce: nonce, uri: uri, response: response, algorithm: algorithm,
                  qop: p["qop"], nc: p["nc"], cnonce: p["cnonce"], opaque: p["opaque"])
    }

    package var headerValue: String {
        var text = "Digest username=\(SIPGrammar.quote(username)), realm=\(SIPGrammar.quote(realm)), nonce=\(SIPGrammar.quote(nonce)), "
            + "uri=\(SIPGrammar.quote(uri)), response=\(SIPGrammar.quote(response)), algorithm=\(algorithm.rawValue)"
        if let qop { text += ", qop=\(qop)" }
        if let nc { text += ", nc=\(nc)" }
        if let cnonce { text += ", cnonce=\(SIPGrammar.quote(cnonce))" }
        if let opaque { text += ", opaque=\(SIPGrammar.quote(opaque))" }
        return text
    }
}
