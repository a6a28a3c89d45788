import Loop
import Media

/// One call's dialog, Parley being the UAS (RFC 3261 section 12), with its INVITE session (section
/// 13): the INVITE rung, answered with the SDP answer or refused; the 2xx sent again until its ACK
/// (section 13.3.1.4); the requests within the dialog answered in order (section 12.2.2): BYE,
/// re-INVITE and UPDATE (hold, a moved address, a session refresh of RFC 4028), INFO keys, the
/// NOTIFYs of a transfer, OPTIONS; and its own requests built (section 12.2.1.1): BYE, and REFER
/// (RFC 3515) with the transfer's deadline.
///
/// A value: messages, commands and the time (monotonic nanoseconds) in, `Action`s out, with the
/// time it next wants to be woken (`nextDeadline`). No socket, no clock: `SIPCall` carries the
/// actions out on the loop, and the tests drive it with fixtures.
package struct SIPDialog {
    package enum State: Sendable, Equatable { case offered, answered, confirmed, ended }

    /// What the dialog asks of its shell, in order.
    package enum Action: Equatable {
        /// A response in the server transaction `key` (the INVITE's, or an in-dialog request's).
        case respond(SIPMessage, SIPTransactionKey)
        /// The 2xx again, to the peer itself: the INVITE's transaction ended with its first send.
        case resend(SIPMessage)
        /// A request of the dialog's, in a client transaction of its own (which adds the Via); a
        /// REFER's final status comes back through `referAnswered(status:now:)`.
        case request(SIPMessage)
        /// The caller's media changed: a re-INVITE's or UPDATE's new offer, the answer in an ACK.
        case media(PhoneAudioOffer)
        /// A key pressed, sent as SIP INFO (application/dtmf-relay) as some PBXs do.
        case key(Character)
        /// The dialog is over; its media and session go.
        case ended(SIPDialogEnd)
    }

    /// What Parley puts in this dialog's messages about itself.
    package struct Local: Sendable, Equatable {
        /// Its Contact, for the transport the INVITE came on.
        package var contact: String
        /// The address and RTP port its SDP gives.
        package var mediaHost: String
        package var mediaPort: UInt16
        /// Our SRTP key (SDES, RFC 4568), on a call whose media is RTP/SAVP; nil for plain RTP.
        package var crypto: SDESCrypto?

        package init(contact: String, mediaHost: String, mediaPort: UInt16, crypto: SDESCrypto? = nil) {
            self.contact = contact
            self.mediaHost = mediaHost
            self.mediaPort = mediaPort
            self.crypto = crypto
        }
    }

    /// The methods Parley takes (its responses' and refusals' Allow).
    package static let allow = "INVITE, ACK, CANCEL, BYE, OPTIONS, UPDATE, INFO, NOTIFY"
    /// A transfer the phone accepted ends this call when the new one is up (a NOTIFY of 2xx, the
    /// phone's BYE), or after this long (RFC 3515 gives no bound; 32 s is 64*T1).
    package static let transferWait: UInt64 = 32_000_000_000

    package let invite: SIPMessage
    package let inviteKey: SIPTransactionKey
    package let callID: String
    package let localTag: String
    private let local: Local
    private let remoteTag: String?
    /// The caller's From (a name-addr without its tag), and the INVITE's To: this dialog's remote
    /// and local URIs (section 12.1.1).
    package let remoteURI: String
    private let localURI: String
    private var remoteTarget: String
    private var routeSet: [String]
    private var localCSeq: UInt32 = 1
    private var remoteCSeq: UInt32
    package private(set) var state = State.offered
    /// The caller's audio as offered (or, for an INVITE without an offer, as answered in the ACK).
    package private(set) var offer: PhoneAudioOffer
    /// The caller's SDP; nil while Parley's own offer (in its 200) waits for the answer in the ACK.
    private var offerSDP: SessionDescription?
    private let sdpSessionID: UInt64
    private var sdpVersion: UInt64 = 1
    /// The 2xx awaiting its ACK, its resend schedule, and when it goes next.
    private var unacknowledged: (response: SIPMessage, schedule: SIPAnswerRetransmission, at: UInt64)?
    /// Set once a REFER was accepted: when this call ends if the transfer has not ended it.
    private var transferEnds: UInt64?
    private var transferring: Bool { transferEnds != nil }

    /// `offer`: the INVITE's SDP as read, nil for an INVITE without one (Parley then offers, and
    /// assumes µ-law until the ACK answers; `source` is where the INVITE came from).
    package init(invite: SIPMessage, key: SIPTransactionKey, localTag: String, local: Local,
                 offer given: (PhoneAudioOffer, SessionDescription)?, source: String, sdpSessionID: UInt64) {
        self.invite = invite
        inviteKey = key
        callID = (try? invite.callID()) ?? ""
        self.localTag = localTag
        self.local = local
        offer = given?.0 ?? .awaitingAnswer(from: source)
        offerSDP = given?.1
        self.sdpSessionID = sdpSessionID
        let from = try? invite.from()
        remoteTag = from?.tag
        remoteURI = from.map { SIPNameAddress(displayName: $0.displayName, uri: $0.uri).description } ?? "<sip:anonymous@anonymous.invalid>"
        localURI = invite.value("To") ?? "<sip:parley@invalid>"
        remoteTarget = (try? invite.contacts())?.first?.uri.description ?? from?.uri.description ?? ""
        // Section 12.1.1: the UAS's route set is the Record-Route values, in order (the proxy
        // nearest Parley first), and its requests carry it so (section 12.2.1.1). Until
        // 2026-11-27 they carried it reversed, which only a path of two proxies or more shows.
        routeSet = invite.values("Record-Route").flatMap { $0.split(separator: ",").map(Self.trimmed) }
        remoteCSeq = (try? invite.cseq().number) ?? 0
    }

    /// The dialog of a call Parley placed, from its INVITE and the 2xx that answered it (section
    /// 12.1.2): Parley's From is the local URI, the INVITE's To (with the answer's tag) the
    /// remote; the answer's Contact is the remote target and its Record-Route, reversed, the
    /// route set; the callee's SDP is its answer to Parley's offer. Confirmed: the ACK went with it.
    package init(uac invite: SIPMessage, answer: SIPMessage, offer: PhoneAudioOffer, local: Local, sdpSessionID: UInt64) {
        self.invite = invite
        inviteKey = SIPTransactionKey.client(for: invite) ?? SIPTransactionKey(branch: "", method: "INVITE")
        callID = (try? invite.callID()) ?? ""
        let from = try? invite.from()
        localTag = from?.tag ?? ""
        self.local = local
        self.offer = offer
        offerSDP = try? SessionDescription(parsing: answer.body)
        self.sdpSessionID = sdpSessionID
        let to = try? answer.to()
        remoteTag = to?.tag
        remoteURI = to.map { SIPNameAddress(displayName: $0.displayName, uri: $0.uri).description } ?? "<sip:anonymous@anonymous.invalid>"
        localURI = from.map { SIPNameAddress(displayName: $0.displayName, uri: $0.uri).description } ?? "<sip:parley@invalid>"
        remoteTarget = (try? answer.contacts())?.first?.uri.description ?? invite.requestURI?.description ?? ""
        routeSet = Self.routeSet(uac: answer)
        localCSeq = (try? invite.cseq().number) ?? 1
        remoteCSeq = 0
        state = .confirmed
    }

    /// A UAC's route set: the 2xx's Record-Route values in reverse (section 12.1.2).
    package static func routeSet(uac answer: SIPMessage) -> [String] {
        answer.values("Record-Route").flatMap { $0.split(separator: ",").map(Self.trimmed) }.reversed()
    }

    /// What the dialog keeps on the heap for the call's life (`HeapSize`'s rules): the INVITE, the
    /// answer awaiting its ACK, the caller's SDP, and the dialog's own strings.
    package var heapBytes: Int {
        invite.heapBytes + (unacknowledged?.response.heapBytes ?? 0) + (offerSDP?.heapBytes ?? 0)
            + HeapSize.of(callID) + HeapSize.of(localTag) + (remoteTag.map(HeapSize.of) ?? 0) + HeapSize.of(remoteURI) + HeapSize.of(localURI)
            + HeapSize.of(remoteTarget) + HeapSize.of(routeSet) + routeSet.reduce(0) { $0 + HeapSize.of($1) }
            + HeapSize.of(local.contact) + HeapSize.of(local.mediaHost) + HeapSize.of(offer.address)
    }

    /// When the dialog next wants `fire(now:)`: the 2xx's resend, or a transfer's end.
    package var nextDeadline: UInt64? {
        switch (unacknowledged?.at, transferEnds) {
        case (let resend?, let transfer?): min(resend, transfer)
        case (let resend?, nil): resend
        case (nil, let transfer?): transfer
        case (nil, nil): nil
        }
    }

    // MARK: The INVITE

    /// 180 Ringing, while the application decides (a webhook).
    package func ring() -> [Action] {
        state == .offered ? [.respond(response(180), inviteKey)] : []
    }

    /// The 200 OK with the SDP answer (or Parley's offer), sent again from `now` until the ACK.
    package mutating func accept(now: UInt64) -> [Action] {
        guard state == .offered else { return [] }
        var ok = response(200)
        for header in SIPSessionTimerAnswer.headers(for: invite) { ok.add(header.name, header.value) }
        ok.add("Content-Type", "application/sdp")
        ok.body = answer().bytes
        state = .answered
        let schedule = SIPAnswerRetransmission()
        unacknowledged = (ok, schedule, now &+ schedule.firstWait)
        return [.respond(ok, inviteKey)]
    }

    /// Refused with `status` (603 Decline unless said).
    package mutating func reject(status: Int = 603) -> [Action] {
        guard state == .offered else { return [] }
        return [.respond(response(status), inviteKey)] + end(.rejected, bye: false)
    }

    /// CANCEL before the answer: 487 to the INVITE, and the dialog is over (section 9.2).
    package mutating func cancelled() -> [Action] {
        guard state == .offered else { return [] }
        return [.respond(response(487), inviteKey)] + end(.cancelled, bye: false)
    }

    /// The ACK of the 2xx: the resends stop; for an INVITE that had no offer, its body is the
    /// caller's answer to Parley's.
    package mutating func acknowledged(_ ack: SIPMessage) -> [Action] {
        unacknowledged = nil
        if state == .answered { state = .confirmed }
        guard offerSDP == nil, !ack.body.isEmpty, let sdp = try? SessionDescription(parsing: ack.body),
              let answer = try? PhoneAudioOffer(sdp) else { return [] }
        offer = answer
        offerSDP = sdp
        return [.media(answer)]
    }

    // MARK: Within the dialog

    /// A request within the dialog (its To has our tag), in its server transaction `key`.
    package mutating func received(_ request: SIPMessage, key: SIPTransactionKey) -> [Action] {
        let method = request.method ?? ""
        if let cseq = try? request.cseq() {
            // Section 12.2.2: a request older than the last is out of order.
            if cseq.number < remoteCSeq && method != "ACK" {
                return [.respond(.response(to: request, status: 500, reason: "Server Internal Error (CSeq out of order)"), key)]
            }
            remoteCSeq = max(remoteCSeq, cseq.number)
        }
        switch method {
        case "BYE":
            return [.respond(.response(to: request, status: 200), key)] + end(transferring ? .transferred : .callerBye, bye: false)
        case "INVITE", "UPDATE":
            return reoffered(request, key: key)
        case "INFO":
            // application/dtmf-relay: "Signal=5".
            let text = String(decoding: request.body, as: UTF8.self)
            let line = text.split(whereSeparator: \.isNewline).first { $0.lowercased().hasPrefix("signal") }
            let pressed = line?.split(separator: "=").last.map(Self.trimmed)?.first
            return [.respond(.response(to: request, status: 200), key)] + (pressed.map { [.key($0)] } ?? [])
        case "NOTIFY":
            // The transfer's new call answered (a sipfrag of 2xx, RFC 3515 section 2.4.5): this one ends.
            let frag = String(decoding: request.body.prefix(64), as: UTF8.self)
            let done = transferring && frag.hasPrefix("SIP/2.0 2")
            return [.respond(.response(to: request, status: 200), key)] + (done ? end(.transferred, bye: true) : [])
        case "OPTIONS":
            return [.respond(.response(to: request, status: 200), key)]
        default:
            var refused = SIPMessage.response(to: request, status: 405)
            refused.add("Allow", Self.allow)
            return [.respond(refused, key)]
        }
    }

    /// A re-INVITE or UPDATE: hold, resume, a moved address, or a session refresh (RFC 4028),
    /// answered with the call's SDP (a new version when the media changed).
    private mutating func reoffered(_ request: SIPMessage, key: SIPTransactionKey) -> [Action] {
        var ok = SIPMessage.response(to: request, status: 200)
        ok.add("Contact", local.contact)
        ok.add("Allow", Self.allow)
        for header in SIPSessionTimerAnswer.headers(for: request) { ok.add(header.name, header.value) }
        var changed: [Action] = []
        if !request.body.isEmpty {
            guard let sdp = try? SessionDescription(parsing: request.body), let reoffer = try? PhoneAudioOffer(sdp) else {
                return [.respond(.response(to: request, status: 488), key)]
            }
            if reoffer != offer {
                offer = reoffer
                offerSDP = sdp
                sdpVersion += 1
                changed = [.media(reoffer)]
            }
            ok.add("Content-Type", "application/sdp")
            ok.body = answer().bytes
        } else if request.method == "INVITE" {
            // An offerless re-INVITE: our offer in the 200; its answer in the ACK is ignored (the
            // media stays as it is).
            ok.add("Content-Type", "application/sdp")
            ok.body = answer().bytes
        }
        return changed + [.respond(ok, key)]
    }

    // MARK: Time

    /// The time is `now`: the 2xx goes again (or, 64*T1 without an ACK, the dialog ends with a
    /// BYE), and a transfer past its wait ends the call.
    package mutating func fire(now: UInt64) -> [Action] {
        var actions: [Action] = []
        if var pending = unacknowledged, pending.at <= now {
            switch pending.schedule.fired() {
            case .giveUp:
                unacknowledged = nil
                actions += hangUp(.noAck)
            case .resend(let wait):
                pending.at = now &+ wait
                unacknowledged = pending
                actions.append(.resend(pending.response))
            }
        }
        if let ends = transferEnds, ends <= now { actions += end(.transferred, bye: true) }
        return actions
    }

    // MARK: Parley's requests

    /// Parley ends the call: a BYE, or before the answer a 480 to the INVITE.
    package mutating func hangUp(_ why: SIPDialogEnd = .serverBye) -> [Action] {
        switch state {
        case .ended: return []
        case .offered: return [.respond(response(480), inviteKey)] + end(why, bye: false)
        case .answered, .confirmed: return end(why, bye: true)
        }
    }

    /// Transfers the call with a REFER (RFC 3515): on its 2xx the phone calls `target`.
    package mutating func refer(to target: String) -> [Action] {
        guard state == .answered || state == .confirmed else { return [] }
        let referTo = target.hasPrefix("<") ? target : "<\(target)>"
        return [.request(request("REFER", headers: [SIPHeader("Refer-To", referTo), SIPHeader("Referred-By", local.contact)]))]
    }

    /// The REFER's final status: accepted (2xx), the phone now makes the new call and ends this
    /// one when it is up; a phone that does neither is hung up on `transferWait` after `now`.
    package mutating func referAnswered(status: Int, now: UInt64) {
        guard (200..<300).contains(status), state == .answered || state == .confirmed else { return }
        transferEnds = now &+ Self.transferWait
    }

    // MARK: Messages

    private mutating func end(_ why: SIPDialogEnd, bye: Bool) -> [Action] {
        guard state != .ended else { return [] }
        let goodbye: [Action] = bye ? [.request(request("BYE"))] : []
        state = .ended
        unacknowledged = nil
        transferEnds = nil
        return goodbye + [.ended(why)]
    }

    /// A response to the INVITE, with our tag; a provisional or 2xx one with our Contact and what
    /// we allow, and a 200 with the session timer the caller asked for.
    private func response(_ status: Int) -> SIPMessage {
        var response = SIPMessage.response(to: invite, status: status, toTag: localTag, source: nil)
        guard status > 100 && status < 300 else { return response }
        response.add("Contact", local.contact)
        response.add("Allow", Self.allow)
        response.add("Supported", "timer")
        if let expires = invite.value("Session-Expires"), status == 200 {
            // RFC 4028 section 9: the caller refreshes (it asked for the timer, or may).
            let seconds = expires.split(separator: ";").first.map(Self.trimmed) ?? "1800"
            response.add("Session-Expires", "\(seconds);refresher=uac")
            response.add("Require", "timer")
        }
        return response
    }

    /// A request in the dialog (section 12.2.1.1): to the remote target, through the route set;
    /// its Via is the transaction's to add.
    private mutating func request(_ method: String, headers extra: [SIPHeader] = []) -> SIPMessage {
        localCSeq += 1
        var message = SIPMessage(.request(method: method, uri: SIPURI(remoteTarget) ?? SIPURI(host: local.mediaHost)))
        message.add("Max-Forwards", "70")
        var from = SIPNameAddress(localURI) ?? SIPNameAddress(uri: SIPURI(host: local.mediaHost))
        from.tag = localTag
        message.add("From", from.description)
        message.add("To", remoteURI + (remoteTag.map { ";tag=\($0)" } ?? ""))
        message.add("Call-ID", callID)
        message.add("CSeq", "\(localCSeq) \(method)")
        for route in routeSet { message.add("Route", route) }
        message.add("Contact", local.contact)
        message.headers += extra
        return message
    }

    /// Parley's SDP: the answer to the caller's offer, or its own offer while it has none.
    private func answer() -> SessionDescription {
        guard let offerSDP else {
            return PhoneAudioOffer.offer(address: local.mediaHost, port: local.mediaPort, sessionID: sdpSessionID, version: sdpVersion, crypto: local.crypto)
        }
        return offer.answer(to: offerSDP, address: local.mediaHost, port: local.mediaPort, sessionID: sdpSessionID, version: sdpVersion,
                            crypto: local.crypto)
    }

    private static func trimmed(_ text: Substring) -> String {
        var text = text
        while text.first == " " || text.first == "\t" { text = text.dropFirst() }
        while text.last == " " || text.last == "\t" { text = text.dropLast() }
        return String(text)
    }
}

/// How a dialog ended (a metric's `end` label in Telephony).
package enum SIPDialogEnd: String, Sendable, CaseIterable {
    /// The caller hung up (BYE), or the server did (the session ended, a hangup asked for).
    case callerBye = "caller_bye", serverBye = "server_bye"
    /// CANCEL before the answer; refused by the application (`reject`, or no answer to its
    /// webhook); no ACK for the answer; no RTP for the media timeout.
    case cancelled, rejected, noAck = "no_ack", mediaTimeout = "media_timeout"
    /// Transferred away (REFER accepted).
    case transferred
    /// Parley's BYE at a drain's bound (`--drain-seconds`): the node was stopping.
    case drained
}
