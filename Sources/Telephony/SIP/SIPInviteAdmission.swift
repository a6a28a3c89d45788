import Media
import SIP

/// Whether an INVITE that begins a call is taken, as a value: the INVITE, where it came from, the
/// calls held and the time in; a refusal (status, reason, headers) or the offer and our SRTP key
/// out. No socket and no clock: the agent reads the loop's clock and the wall clock and passes
/// them, so a test can say every refusal in order.
///
/// The checks run in the order a caller is told of them: who may call (the source address, then
/// a trunk's digest, RFC 3261 section 22), how many calls a second and at once (503 with
/// Retry-After, section 21.5.4), a Call-ID already held (482, section 8.2.2.2), then the offer
/// (415, 400, 488: section 13.3.1.1) and SRTP's rules (RFC 4568).
struct SIPInviteAdmission {
    enum Verdict {
        case refuse(Refusal)
        /// The call is taken: its Call-ID, the caller's offer (nil: none, Parley offers in its
        /// 200, RFC 3264 section 5) and our SRTP key when the call's media is RTP/SAVP.
        case accept(callID: String, offer: (PhoneAudioOffer, SessionDescription)?, crypto: SDESCrypto?)
    }

    /// A final response to the INVITE: its status and reason phrase (nil: the status's own), the
    /// reason /metrics counts it under, and the headers that say what would be taken instead.
    struct Refusal: Error, Equatable {
        let status: Int
        let reason: SIPRefusal
        var phrase: String? = nil
        var headers: [SIPHeader] = []

        /// After admission, the one refusal left: no RTP port could be bound for the call.
        static let noRTPPort = Refusal(status: 503, reason: .busy, phrase: "Service Unavailable (no RTP port)")
        /// The server drains (SIGTERM): its calls finish, new ones go to another node (section
        /// 21.5.4: 503 with Retry-After; a proxy's OPTIONS probe is answered the same).
        static let draining = Refusal(status: 503, reason: .draining, phrase: "Service Unavailable (draining)", headers: [SIPHeader("Retry-After", "60")])
        /// Past the calls held or begun a second: try again later (section 21.5.4).
        static func busy(_ reason: SIPRefusal) -> Refusal { Refusal(status: 503, reason: reason, headers: [SIPHeader("Retry-After", "5")]) }
        /// An offer Parley cannot answer (section 13.3.1.1: 488 with a Warning, 304 being
        /// "media type not available").
        static func notAcceptable(_ reason: SIPRefusal, _ why: String) -> Refusal {
            Refusal(status: 488, reason: reason, phrase: "Not Acceptable Here", headers: [SIPHeader("Warning", "304 parley \"\(why)\"")])
        }
    }

    /// INVITEs begun in the current second, for `--sip-max-invites`: a fixed window, begun by the
    /// first INVITE a second or more after the last window began.
    struct InviteRate: Equatable {
        private(set) var count = 0
        private(set) var windowStarted: UInt64 = 0

        /// One more INVITE at `now` (loop nanoseconds); whether it is within `limit`.
        mutating func admit(now: UInt64, limit: Int) -> Bool {
            if now &- windowStarted >= 1_000_000_000 {
                windowStarted = now
                count = 0
            }
            count += 1
            return count <= limit
        }
    }

    let allowedSources: [AddressRange]
    /// Trunks' passwords by digest username; empty: no digest asked for.
    let trunks: [String: String]
    let authenticator: SIPDigestAuthenticator
    let maxInvitesPerSecond: Int
    let maxCalls: Int
    let srtp: SIPEndpoint.Settings.SRTPPolicy
    private(set) var rate = InviteRate()

    init(settings: SIPEndpoint.Settings, authenticator: SIPDigestAuthenticator) {
        allowedSources = settings.allowedSources
        trunks = settings.trunks ?? [:]
        self.authenticator = authenticator
        maxInvitesPerSecond = settings.maxInvitesPerSecond
        maxCalls = settings.maxCallsPerLoop
        srtp = settings.srtp
    }

    /// The verdict on `invite` from `source` (over TLS or not), with `calls` held by Call-ID, at
    /// `now` (the loop's nanoseconds, for the rate) and `wallSeconds` (the digest nonces' time).
    /// An INVITE that passes who may call counts towards the rate, taken or not.
    /// `draining`: the server drains, and takes no new call.
    mutating func admit<Call>(_ invite: SIPMessage, from source: TransportAddress, overTLS: Bool, calls: [String: Call],
                              now: UInt64, wallSeconds: UInt64, draining: Bool = false) -> Verdict {
        guard allowedSources.contains(where: { $0.contains(source) }) else {
            return .refuse(Refusal(status: 403, reason: .sourceNotAllowed, phrase: "Forbidden (source address not allowed)"))
        }
        if !trunks.isEmpty, let challenges = challenges(invite, wallSeconds: wallSeconds) {
            return .refuse(Refusal(status: 401, reason: .unauthorized, headers: challenges.map { SIPHeader("WWW-Authenticate", $0) }))
        }
        if draining { return .refuse(.draining) }
        guard rate.admit(now: now, limit: maxInvitesPerSecond) else { return .refuse(.busy(.rateLimited)) }
        guard calls.count < maxCalls else { return .refuse(.busy(.busy)) }
        guard let callID = try? invite.callID(), calls[callID] == nil else {
            return .refuse(Refusal(status: 482, reason: .badRequest, phrase: "Loop Detected"))
        }
        let offer: (PhoneAudioOffer, SessionDescription)?
        do throws(Refusal) { offer = try Self.offer(in: invite) } catch { return .refuse(error) }
        // SDES keys travel in the SDP: taken and given only over TLS (RFC 4568 section 8.3).
        if offer?.0.crypto != nil, !overTLS {
            return .refuse(.notAcceptable(.srtp, "SRTP keys (a=crypto) are taken only on calls signalled over TLS"))
        }
        if srtp == .required, offer.map({ $0.0.crypto == nil }) ?? !overTLS {
            return .refuse(.notAcceptable(.srtp, "this server takes calls with SRTP only (RTP/SAVP, a=crypto, over TLS)"))
        }
        // Our key: for an offer with SRTP, or for our own offer over TLS where SRTP is required.
        let crypto: SDESCrypto? = offer?.0.crypto != nil || (offer == nil && srtp == .required) ? .fresh() : nil
        return .accept(callID: callID, offer: offer, crypto: crypto)
    }

    /// The `WWW-Authenticate` values to challenge `invite` with (section 22.1, one per
    /// algorithm), or nil when it answers a challenge of ours with a trunk's password; a nonce of
    /// ours that has expired is challenged again with stale=true (section 22.4's RFC 2617).
    private func challenges(_ invite: SIPMessage, wallSeconds now: UInt64) -> [String]? {
        guard let header = invite.value("Authorization"), let credentials = SIPDigestCredentials(header),
              let password = trunks[credentials.username] else {
            return authenticator.challenges(now: now).map(\.headerValue)
        }
        switch authenticator.check(credentials, method: invite.method ?? "INVITE", password: password, now: now) {
        case .accepted: return nil
        case .stale: return authenticator.challenges(now: now, stale: true).map(\.headerValue)
        case .rejected: return authenticator.challenges(now: now).map(\.headerValue)
        }
    }

    /// The caller's SDP offer: none in an INVITE with no body; refused when the body is not SDP
    /// (415 with Accept, section 21.4.13), unreadable (400) or offers nothing Parley can answer (488).
    private static func offer(in invite: SIPMessage) throws(Refusal) -> (PhoneAudioOffer, SessionDescription)? {
        if invite.body.isEmpty { return nil }
        guard (try? invite.contentType())??.isSDP == true else {
            throw Refusal(status: 415, reason: .badRequest, phrase: "Unsupported Media Type", headers: [SIPHeader("Accept", "application/sdp")])
        }
        let sdp: SessionDescription
        do throws(SDPError) { sdp = try SessionDescription(parsing: invite.body) } catch {
            throw Refusal(status: 400, reason: .badRequest, phrase: "Bad Request (unreadable SDP)")
        }
        do throws(PhoneAudioOffer.Refusal) { return (try PhoneAudioOffer(sdp), sdp) } catch {
            throw .notAcceptable(.noCommonCodec, "\(error)")
        }
    }
}
