import JSON
import Session
import Loop
import Server
import TLS

/// Twilio's request signature (https://www.twilio.com/docs/usage/webhooks/webhooks-security):
/// `X-Twilio-Signature` is base64(HMAC-SHA1(auth token, the URL Twilio requested)), and for a
/// WebSocket upgrade (a GET) there are no POST parameters to append. Checked before the upgrade,
/// so a stream that Twilio did not open gets 403 and no session.
struct TwilioSignature: Sendable {
    private let token: [UInt8]
    /// The scheme and host Twilio was given (`wss://voice.example.com`), when the server sits behind
    /// a proxy that changes them; nil: `wss://` and the request's Host.
    let publicBase: String?

    init(authToken: [UInt8], publicBase: String?) {
        Secrets.register(String(decoding: authToken, as: UTF8.self))
        token = authToken
        self.publicBase = publicBase.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
    }

    /// The URL as Twilio requested it: the base and the request's target, query included.
    func url(of request: HTTPRequest) -> String {
        (publicBase ?? "wss://" + (request.header("host") ?? "")) + request.target
    }

    func expected(for url: String) -> String { Base64.encode(OpenSSL.hmacSHA1(key: token, Array(url.utf8))) }

    /// Whether `signature` is Twilio's for `url`, compared in constant time.
    func accepts(_ signature: String?, url: String) -> Bool {
        guard let signature else { return false }
        return OpenSSL.constantTimeEqual(Array(signature.utf8), Array(expected(for: url).utf8))
    }
}
