import JSON
import Loop
import SIP
import TLS
import Upstream

/// OpenAI's `realtime.call.incoming` webhook for a SIP call: posted to the application's URL as
/// Standard Webhooks sign it (`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64 of
/// HMAC-SHA256 over "id.timestamp.body">`, the key the `whsec_` secret's base64 bytes), with the
/// call's id and its INVITE's headers (not its credentials: `withheld`). The application answers through call control (`accept`,
/// `reject`); one that has not within `answerSeconds` leaves the call refused (480).
public struct SIPWebhook: Sendable {
    /// Which API's event announces the call.
    public enum API: String, Sendable, CaseIterable {
        /// `realtime.call.incoming` with `call_id`.
        case realtime
        /// GPT-Live's `live.transport.incoming` with `session_id` and `type: "sip"`.
        case live
    }

    let url: UpstreamURL
    var api = API.realtime
    /// The secret's key bytes (`whsec_` and base64 in the operator's file, as OpenAI's dashboard gives it).
    let key: [UInt8]
    var answerSeconds = 20.0

    /// The headers the event carries, at most this many: an INVITE can carry hundreds.
    static let maxHeaders = 64

    /// What the event leaves out, as OpenAI's does ("excluding SIP authorization headers"): a
    /// trunk's digest answer, which anyone who reads the webhook (or its logs) could replay while
    /// its nonce lasts.
    static let withheld: Set<String> = ["Authorization", "Proxy-Authorization"]

    /// `whsec_…` (or bare base64) as the operator's file holds it.
    init?(url text: String, secret: String) {
        guard let url = UpstreamURL(text) else { return nil }
        let encoded = secret.hasPrefix("whsec_") ? String(secret.dropFirst(6)) : secret
        guard let key = Base64.decode(encoded.utf8), !key.isEmpty else { return nil }
        self.url = url
        self.key = key
    }

    /// The event's body for `call`'s INVITE.
    static func body(id: String, callID: String, invite: SIPMessage, at seconds: Int, api: API = .realtime) -> String {
        let headers = invite.headers.filter { !withheld.contains($0.name) }.prefix(maxHeaders)
            .map { JSON.object([("name", .string($0.name)), ("value", .string($0.value))]) }
        let (type, data): (String, [(String, JSON)]) = switch api {
        case .realtime: ("realtime.call.incoming", [("call_id", .string(callID)), ("sip_headers", .array(headers))])
        case .live: ("live.transport.incoming", [("session_id", .string(callID)), ("sip_headers", .array(headers)), ("type", .string("sip"))])
        }
        return JSON.object([
            ("object", .string("event")), ("id", .string(id)), ("type", .string(type)), ("created_at", .int(seconds)), ("data", .object(data)),
        ]).description
    }

    /// Standard Webhooks' signature of `body` sent as message `id` at `seconds`.
    func signature(id: String, seconds: Int, body: String) -> String {
        "v1," + Base64.encode(OpenSSL.hmacSHA256(key: key, Array("\(id).\(seconds).\(body)".utf8)))
    }

    /// Posts the event for `callID` on `loop`; `done` gets whether the application took it (a 2xx).
    func post(callID: String, invite: SIPMessage, on loop: EventLoop, done: @escaping (Bool) -> Void) {
        let id = "evt_" + OpenSSL.hex(OpenSSL.randomBytes(12))
        let seconds = WallClock.seconds()
        let body = Self.body(id: id, callID: callID, invite: invite, at: seconds, api: api)
        var request = HTTPClientRequest(method: "POST", url: url, headers: [
            ("Content-Type", "application/json"), ("webhook-id", id), ("webhook-timestamp", String(seconds)),
            ("webhook-signature", signature(id: id, seconds: seconds, body: body)),
        ], body: Array(body.utf8))
        request.timeouts.connect = 5
        request.timeouts.firstByte = 10
        var status = 0
        _ = loop.httpClient.send(request, onHead: { head in status = head.status }, onBody: { _ in }, onEnd: { result in
            if case .success = result { done((200..<300).contains(status)) } else { done(false) }
        })
    }
}
