import Media

/// A call Parley places, up to its answer (RFC 3261 as the UAC): its INVITE with Parley's SDP
/// offer (section 13.2.1), the responses to it (section 13.2.2): a 1xx rings, a 183 with SDP is
/// early media to hear, a 2xx is acknowledged (section 13.2.2.4, again for each retransmission) and
/// makes the call's `SIPDialog`, a 3xx-6xx ends it with the reason the callee's side gave; a digest
/// challenge is answered once (section 22.2); and CANCEL (section 9.1) when no one answers within
/// `ringFor`, or Parley hangs up first, but never before a provisional response: section 9.1 says
/// a client SHOULD NOT send one until then. With none yet, the CANCEL waits for the first 1xx; a
/// call that hears nothing at all until timer B is `unreachable`, whatever its ring time.
///
/// What the application is told, it is told once and as soon as it is decided: a hangup is
/// `cancelled` at once, though the INVITE's transaction goes on by the rules (a 2xx that comes
/// after it is acknowledged, and the call it makes is hung up: `isFinished` says when nothing
/// more can come).
///
/// A value, as `SIPDialog` is: responses, commands and the time (monotonic nanoseconds) in,
/// `Action`s out, with `nextDeadline`. The INVITE's client transaction (resends, timer B) is the
/// user agent's `SIPClientInviteTransaction`; this is the transaction user above it.
package struct SIPOutboundInvite {
    package enum Progress: Sendable, Equatable {
        /// A 180, or a 183 without SDP: the callee's phone rings.
        case ringing
        /// A 183 with the callee's SDP: early media (a carrier's ringback, an announcement).
        case earlyMedia(PhoneAudioOffer)
        /// The 2xx: the call is up, on the callee's answer to Parley's offer.
        case answered(PhoneAudioOffer)
        case failed(SIPCallFailure)
    }

    package enum Action: Equatable {
        /// An INVITE in a client transaction of its own (the user agent adds the Via): the first,
        /// or the same again with credentials.
        case invite(SIPMessage)
        /// CANCEL the INVITE in flight (`SIPMessage.cancel(for:)` of the INVITE as its transaction
        /// sent it, Via and all: section 9.1).
        case cancel
        /// The ACK of a 2xx, to the peer outside any transaction (the user agent adds a Via).
        case ack(SIPMessage)
        case progress(Progress)
    }

    /// Where the call goes and as whom.
    package struct Destination: Sendable, Equatable {
        /// The INVITE's Request-URI and To: the number or address at the trunk.
        package var uri: SIPURI
        /// The From: who calls (the trunk's caller id, as a SIP URI).
        package var from: SIPURI
        /// Digest credentials for a trunk that challenges (username, password).
        package var credentials: (username: String, password: String)?

        package init(uri: SIPURI, from: SIPURI, credentials: (username: String, password: String)? = nil) {
            self.uri = uri
            self.from = from
            self.credentials = credentials
        }

        package static func == (a: Destination, b: Destination) -> Bool {
            a.uri == b.uri && a.from == b.from && a.credentials?.username == b.credentials?.username && a.credentials?.password == b.credentials?.password
        }
    }

    private enum State: Equatable {
        case calling
        /// Given up, with no provisional response yet: the CANCEL waits for one (section 9.1).
        case cancelPending(SIPCallFailure)
        /// CANCEL sent: a 487 (or a 2xx, which crossed it) is what comes next.
        case cancelling(SIPCallFailure)
        case answered
        case ended
    }

    package let callID: String
    package let localTag: String
    private let destination: Destination
    private let local: SIPDialog.Local
    private let sdpSessionID: UInt64
    /// The INVITE now in flight (its CSeq grows when it is sent again with credentials).
    package private(set) var invite: SIPMessage
    private var state = State.calling
    private var rang = false
    /// A provisional response came (a 100 included): a CANCEL may be sent.
    private var provisional = false
    /// The call's failure was told (`.progress(.failed)`): it is told once.
    private var told = false
    private var earlyMedia: PhoneAudioOffer?
    /// The challenge answered: a second one for the same realm is a wrong password, not a nonce.
    private var answeredChallenge = false
    /// When no one has answered, it is cancelled.
    private var ringsUntil: UInt64
    /// The 2xx's ACK, sent again for each retransmission of it.
    private var ack: SIPMessage?
    /// The answer that made the call, for `dialog()`.
    private var answer: SIPMessage?

    /// How long a call rings before it is cancelled, unless the caller says.
    package static let defaultRingSeconds = 30

    package init(destination: Destination, callID: String, localTag: String, local: SIPDialog.Local, sdpSessionID: UInt64,
                 now: UInt64, ringFor seconds: Int = SIPOutboundInvite.defaultRingSeconds) {
        self.destination = destination
        self.callID = callID
        self.localTag = localTag
        self.local = local
        self.sdpSessionID = sdpSessionID
        ringsUntil = now &+ UInt64(max(1, seconds)) * 1_000_000_000
        var from = SIPNameAddress(uri: destination.from)
        from.tag = localTag
        var invite = SIPMessage(.request(method: "INVITE", uri: destination.uri))
        invite.add("Max-Forwards", "70")
        invite.add("From", from.description)
        invite.add("To", SIPNameAddress(uri: destination.uri).description)
        invite.add("Call-ID", callID)
        invite.add("CSeq", "1 INVITE")
        invite.add("Contact", local.contact)
        invite.add("Allow", SIPDialog.allow)
        invite.add("Supported", "timer")
        invite.add("Content-Type", "application/sdp")
        invite.body = PhoneAudioOffer.offer(address: local.mediaHost, port: local.mediaPort, sessionID: sdpSessionID, version: 1, crypto: local.crypto).bytes
        self.invite = invite
    }

    package var nextDeadline: UInt64? { state == .calling ? ringsUntil : nil }

    /// Nothing more can come of the INVITE: answered (a 2xx, taken or hung up), or ended.
    package var isFinished: Bool { state == .answered || state == .ended }

    package func start() -> [Action] { [.invite(invite)] }

    /// A response to the INVITE.
    package mutating func received(_ response: SIPMessage) -> [Action] {
        guard let status = response.status, (try? response.cseq().method) == "INVITE" else { return [] }
        switch (state, status) {
        case (.ended, _):
            return []
        case (.answered, 200..<300):
            return ack.map { [.ack($0)] } ?? []
        case (.answered, _):
            return []
        case (.cancelPending(let why), 100..<200):
            // The first provisional: the CANCEL that waited goes now.
            provisional = true
            state = .cancelling(why)
            return [.cancel] + tell(why)
        case (_, 100):
            provisional = true
            return []
        case (.calling, 101..<200):
            provisional = true
            if status == 183, let sdp = try? SessionDescription(parsing: response.body), let offer = try? PhoneAudioOffer(sdp), earlyMedia != offer, takes(offer) {
                earlyMedia = offer
                return [.progress(.earlyMedia(offer))]
            }
            guard !rang else { return [] }
            rang = true
            return [.progress(.ringing)]
        case (.cancelling, 101..<200):
            return []
        case (_, 200..<300):
            return answered(response)
        case (.cancelling(let why), 487):
            state = .ended
            return tell(why)
        case (.calling, 401), (.calling, 407):
            return challenged(response, proxy: status == 407)
        default:
            state = .ended
            return tell(SIPCallFailure(status: status, response: response))
        }
    }

    /// The failure told, unless one was told already.
    private mutating func tell(_ failure: SIPCallFailure) -> [Action] {
        guard !told else { return [] }
        told = true
        return [.progress(.failed(failure))]
    }

    /// The INVITE's transaction ended with no final response (timer B): nothing answered at all.
    package mutating func timedOut() -> [Action] {
        switch state {
        case .calling, .cancelPending:
            // Nothing answered at all, however long it was to ring.
            state = .ended
            return tell(.unreachable)
        case .cancelling(let why):
            state = .ended
            return tell(why)
        case .answered, .ended:
            return []
        }
    }

    /// The time is `now`: a call still ringing at its limit is cancelled.
    package mutating func fire(now: UInt64) -> [Action] {
        guard state == .calling, now >= ringsUntil else { return [] }
        return cancel(.noAnswer)
    }

    /// Parley gives up before the answer (the session closed, a hangup asked for).
    package mutating func hangUp() -> [Action] {
        // Rung out with nothing heard yet: the hangup is what the application is told.
        if case .cancelPending = state, !told {
            state = .cancelPending(.cancelled)
            return tell(.cancelled)
        }
        guard state == .calling else { return [] }
        return cancel(.cancelled)
    }

    /// The far end sent BYE before answering (in its early dialog, as some carriers end early
    /// media): the INVITE is cancelled, and the call ends as hung up early.
    package mutating func hungUpEarly() -> [Action] {
        guard state == .calling else { return [] }
        return cancel(.hungUpEarly)
    }

    /// Gives up on the call: CANCEL once a provisional response has come, else when one does
    /// (section 9.1). A hangup is told at once; a call that rang out is `no_answer` once it is
    /// known to have rung, `unreachable` if it never did (told at timer B).
    private mutating func cancel(_ why: SIPCallFailure) -> [Action] {
        let told = why == .noAnswer && !provisional ? [] : tell(why)
        guard provisional else {
            state = .cancelPending(why)
            return told
        }
        state = .cancelling(why)
        return [.cancel] + told
    }

    /// The call's dialog, once answered (RFC 3261 section 12.1.2), even by an answer whose SDP
    /// Parley cannot take (its dialog is what the BYE that ends it is sent in).
    package func dialog() -> SIPDialog? {
        guard state == .answered, let answer else { return nil }
        let offer = (try? PhoneAudioOffer(SessionDescription(parsing: answer.body))) ?? .awaitingAnswer(from: "")
        return SIPDialog(uac: invite, answer: answer, offer: offer, local: local, sdpSessionID: sdpSessionID)
    }

    private mutating func answered(_ response: SIPMessage) -> [Action] {
        let cancelled: SIPCallFailure? = switch state {
        case .cancelling(let why), .cancelPending(let why): why
        default: nil
        }
        state = .answered
        answer = response
        let ack = Self.ack(for: invite, answer: response)
        self.ack = ack
        // A 2xx that crossed our CANCEL is still a call: acknowledged, then hung up (section 9.1).
        if let cancelled { return [.ack(ack)] + tell(cancelled) }
        guard let sdp = try? SessionDescription(parsing: response.body), let offer = try? PhoneAudioOffer(sdp), takes(offer) else {
            return [.ack(ack), .progress(.failed(.noAcceptableAnswer))]
        }
        return [.ack(ack), .progress(.answered(offer))]
    }

    /// Whether the far end's SDP answers ours: SRTP with a key of its own when we offered SRTP
    /// (RFC 4568), plain RTP when we did not.
    private func takes(_ answer: PhoneAudioOffer) -> Bool { (answer.crypto == nil) == (local.crypto == nil) }

    /// A 401 or 407: the INVITE again, with credentials for the challenge, once.
    private mutating func challenged(_ response: SIPMessage, proxy: Bool) -> [Action] {
        let header = proxy ? "Proxy-Authenticate" : "WWW-Authenticate"
        let challenge = response.values(header).lazy.compactMap(SIPDigestChallenge.init).first
        guard let credentials = destination.credentials, let challenge, !answeredChallenge || challenge.stale else {
            state = .ended
            return [.progress(.failed(.unauthorized(status: proxy ? 407 : 401)))]
        }
        answeredChallenge = true
        let answer = SIPDigestCredentials.answering(challenge, method: "INVITE", uri: destination.uri.description, username: credentials.username,
                                                    password: credentials.password, cnonce: String(sdpSessionID, radix: 16))
        var next = invite
        let number = ((try? invite.cseq().number) ?? 1) + 1
        next.headers.removeAll { $0.name == "CSeq" || $0.name == "Authorization" || $0.name == "Proxy-Authorization" }
        next.add("CSeq", "\(number) INVITE")
        next.add(proxy ? "Proxy-Authorization" : "Authorization", answer.headerValue)
        invite = next
        return [.invite(next)]
    }

    /// The ACK of a 2xx (section 13.2.2.4): to the answer's Contact, through its route set, with
    /// the INVITE's CSeq number; its Via is the user agent's to add.
    static func ack(for invite: SIPMessage, answer: SIPMessage) -> SIPMessage {
        let target = (try? answer.contacts())?.first?.uri ?? invite.requestURI ?? SIPURI(host: "invalid")
        var ack = SIPMessage(.request(method: "ACK", uri: target))
        ack.add("Max-Forwards", "70")
        for name in ["From", "Call-ID"] { if let value = invite.value(name) { ack.add(name, value) } }
        if let to = answer.value("To") { ack.add("To", to) }
        if let cseq = try? invite.cseq() { ack.add("CSeq", SIPCSeq(cseq.number, "ACK").description) }
        for route in SIPDialog.routeSet(uac: answer) { ack.add("Route", route) }
        return ack
    }
}

/// Why a call Parley placed did not go on (the call's `failed` progress, and its end).
package enum SIPCallFailure: Sendable, Equatable {
    /// 486 Busy Here, 600 Busy Everywhere.
    case busy
    /// Rang out (Parley cancelled it), or 480 / 408 from the far end.
    case noAnswer
    /// 603 Decline, or another refusal of the callee's, with its status.
    case declined(status: Int)
    /// 401 / 407 with no credentials for it, or the credentials refused.
    case unauthorized(status: Int)
    /// 503 (or 500, 502, 504), with the Retry-After it gave, in seconds.
    case unavailable(status: Int, retryAfter: Int?)
    /// No response at all (the INVITE's transaction timed out).
    case unreachable
    /// Parley gave up before the answer (hung up, the session closed).
    case cancelled
    /// Answered with no SDP Parley can take: acknowledged and hung up.
    case noAcceptableAnswer
    /// The far end sent BYE in its early dialog (during early media), before any answer.
    case hungUpEarly
    /// Any other final status (404, 484, 488, …).
    case failed(status: Int)

    package init(status: Int, response: SIPMessage) {
        switch status {
        case 486, 600: self = .busy
        case 408, 480, 487: self = .noAnswer
        case 401, 407: self = .unauthorized(status: status)
        case 603, 403: self = .declined(status: status)
        case 500, 502, 503, 504:
            // "Retry-After: 120;duration=3600" (section 20.33): its seconds.
            let retry = response.value("Retry-After").flatMap { Int(String($0.prefix { $0.isNumber })) }
            self = .unavailable(status: status, retryAfter: retry)
        default: self = .failed(status: status)
        }
    }

    /// The SIP status behind it, when one came.
    package var status: Int? {
        switch self {
        case .busy: 486
        case .declined(let status), .unauthorized(let status), .unavailable(let status, _), .failed(let status): status
        case .noAnswer, .unreachable, .cancelled, .noAcceptableAnswer, .hungUpEarly: nil
        }
    }

    /// What kind of failure it is; its name (`reason`) is what events and metrics say.
    package enum Kind: String, Sendable, CaseIterable {
        case busy, noAnswer = "no_answer", declined, unauthorized, unavailable, unreachable, cancelled
        case noAcceptableAnswer = "no_acceptable_answer", hungUpEarly = "hung_up_early", failed
    }

    package var kind: Kind {
        switch self {
        case .busy: .busy
        case .noAnswer: .noAnswer
        case .declined: .declined
        case .unauthorized: .unauthorized
        case .unavailable: .unavailable
        case .unreachable: .unreachable
        case .cancelled: .cancelled
        case .noAcceptableAnswer: .noAcceptableAnswer
        case .hungUpEarly: .hungUpEarly
        case .failed: .failed
        }
    }

    package var reason: String { kind.rawValue }

    /// What happened, in words (a `transport.failed` event's message).
    package var message: String {
        switch self {
        case .busy: "the callee is busy"
        case .noAnswer: "no one answered"
        case .declined(let status): "the callee declined the call (\(status))"
        case .unauthorized(let status): "the trunk refused Parley's credentials (\(status))"
        case .unavailable(let status, let retry): "the trunk is unavailable (\(status))" + (retry.map { "; retry after \($0) s" } ?? "")
        case .unreachable: "the trunk did not answer the INVITE"
        case .cancelled: "the call was hung up before it was answered"
        case .noAcceptableAnswer: "the callee answered with no G.711 audio Parley can take"
        case .hungUpEarly: "the far end hung up before answering (a BYE during early media)"
        case .failed(let status): "the call failed with SIP status \(status)"
        }
    }
}
