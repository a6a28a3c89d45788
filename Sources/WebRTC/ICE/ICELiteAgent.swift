import Media
/// One call's ICE-lite agent (RFC 8445 sections 2.5 and 7.3): the browser is the full agent and
/// controls; Parley sends no checks, answers the browser's Binding requests on its host candidate,
/// and takes the address of the nominated check as the one place media may go (section 12).
///
/// A pure value: datagrams and the time in, actions out. The loop's shared UDP port finds the
/// agent by `STUNMessage.usernamePrefix` (our ufrag) and sends what it is told to.
///
/// Liveness stands in for consent (RFC 7675): a lite agent sends no checks of its own, so what
/// shows the path still works is the peer's authenticated traffic from the selected address: its
/// consent checks (Chromium's, every 5 s or so), and its SRTP, SRTCP and DTLS records, which only
/// the holder of the handshake's keys can make (`authenticated`). libnice (GStreamer's webrtcbin)
/// keeps a nominated pair alive with Binding indications and its media, no requests: counting
/// checks alone ended its calls `peer_gone` 30 s after the answer while audio flowed both ways.
/// Indications carry no integrity and count for nothing. Nothing of either for `consentTimeout`
/// (RFC 7675 section 5.1's 30 s) and the call is over. Before anything is selected,
/// `setupTimeout` bounds how long an offer may sit without a nomination.
struct ICELiteAgent: Sendable {
    struct Settings: Equatable, Sendable {
        /// Nanoseconds without a valid check from the selected address before consent is lost.
        var consentTimeout: UInt64 = 30_000_000_000
        /// Nanoseconds from the agent's creation within which the browser must nominate a pair.
        var setupTimeout: UInt64 = 15_000_000_000

        init() {}
    }

    enum Action: Equatable, Sendable {
        /// A datagram for the loop to send from the candidate's port.
        case send([UInt8], to: TransportAddress)
        /// The browser nominated a pair, or moved to another: media goes here from now on.
        case selected(TransportAddress)
        /// A datagram was refused, for the metrics; a `.send` with the error response comes
        /// before it when the refusal is answered.
        case refused(Refusal)
        /// Consent was lost or never given: the call should end. Reported once.
        case expired
    }

    /// Why a datagram was not taken as a valid check.
    enum Refusal: Equatable, Sendable, CustomStringConvertible {
        /// Fails STUN's header checks or its FINGERPRINT: dropped unanswered (RFC 8489 section 6.3).
        case notSTUN
        case badFingerprint
        /// A request whose attributes do not parse, or that lacks USERNAME or MESSAGE-INTEGRITY,
        /// or whose method is not Binding: 400.
        case malformed
        /// The USERNAME is not "ours:theirs", or MESSAGE-INTEGRITY does not verify under our
        /// password: 401, without integrity of its own (RFC 8489 section 9.1.3).
        case unauthorized
        /// Comprehension-required attributes Parley does not know: 420 (RFC 8489 section 6.3.1).
        case unknownAttributes
        /// The browser claims the controlled role too: 487 (RFC 8445 section 7.3.1.1).
        case roleConflict

        var description: String {
            switch self {
            case .notSTUN: "not STUN"
            case .badFingerprint: "bad fingerprint"
            case .malformed: "malformed request"
            case .unauthorized: "unauthorized"
            case .unknownAttributes: "unknown comprehension-required attributes"
            case .roleConflict: "role conflict"
            }
        }
    }

    let settings: Settings
    /// Ours, for the answer's a=ice-ufrag and a=ice-pwd.
    let local: ICECredentials
    /// The browser's, from the offer: its ufrag is USERNAME's second half in its checks.
    let remote: ICECredentials
    /// The nominated pair's remote address: the only place media may be sent (RFC 8445 section 12).
    private(set) var selected: TransportAddress?
    private(set) var isExpired = false

    private let localUfrag: [UInt8]
    private let remoteUfrag: [UInt8]
    private let integrityKey: [UInt8]
    private let createdAt: UInt64
    /// When the last valid check from the selected address arrived (selection counts as one).
    private var lastConsent: UInt64

    init(local: ICECredentials = .generate(), remote: ICECredentials, now: UInt64, settings: Settings = Settings()) {
        self.local = local
        self.remote = remote
        self.settings = settings
        localUfrag = Array(local.ufrag.utf8)
        remoteUfrag = Array(remote.ufrag.utf8)
        integrityKey = Array(local.password.utf8)
        createdAt = now
        lastConsent = now
    }

    /// When `tick` next has something to decide: the set-up or consent deadline; nil once expired.
    var deadline: UInt64? {
        guard !isExpired else { return nil }
        return selected == nil ? createdAt &+ settings.setupTimeout : lastConsent &+ settings.consentTimeout
    }

    /// The peer sent something only it could (a packet that passed SRTP's or SRTCP's
    /// authentication, a DTLS record its keys protect) from `source`: from the selected address it
    /// shows the path works as a valid check does. A store, no action: the consent deadline moves
    /// and `tick` finds it so, so media costs no timer work a packet.
    mutating func authenticated(from source: TransportAddress, now: UInt64) {
        guard !isExpired, source == selected else { return }
        lastConsent = now
    }

    /// `.expired` once the set-up or consent deadline has passed; nil before, and after.
    mutating func tick(now: UInt64) -> Action? {
        guard let deadline, now >= deadline else { return nil }
        isExpired = true
        return .expired
    }

    mutating func receive(_ datagram: [UInt8], from source: TransportAddress, now: UInt64) -> [Action] {
        datagram.withUnsafeBytes { receive($0, from: source, now: now) }
    }

    /// Answers one datagram from `source`: at most one `.send`, and a `.selected` when it nominates
    /// a new address. Indications and responses are ignored (a lite agent has no transactions of
    /// its own); after expiry everything is.
    mutating func receive(_ datagram: UnsafeRawBufferPointer, from source: TransportAddress, now: UInt64) -> [Action] {
        guard !isExpired else { return [] }
        let header: STUNWire.Header
        do { header = try STUNWire.header(datagram) } catch { return [.refused(.notSTUN)] }
        let (method, messageClass) = STUNMessage.split(type: header.type)
        guard messageClass == .request else { return [] }

        let request: STUNMessage
        do { request = try STUNMessage(parsing: datagram) } catch {
            return refuse(header.transactionID, method: method, .badRequest, .malformed, to: source, signed: false)
        }
        if request.fingerprint != nil && !STUNMessage.fingerprintIsValid(datagram) { return [.refused(.badFingerprint)] }
        guard method == STUNMessage.binding else {
            return refuse(header.transactionID, method: method, .badRequest, .malformed, to: source, signed: false)
        }

        // RFC 8489 section 9.1.3: both credentials' attributes or 400; the right ones or 401.
        guard let username = request.username, request.messageIntegrity != nil else {
            return refuse(header.transactionID, method: method, .badRequest, .malformed, to: source, signed: false)
        }
        guard usernameIsOurs(username), STUNMessage.integrityIsValid(datagram, key: integrityKey) else {
            return refuse(header.transactionID, method: method, .unauthorized, .unauthorized, to: source, signed: false)
        }

        // Authenticated from here, so every answer carries our integrity (RFC 8489 section 9.1.4).
        let unknown = request.unknownComprehensionRequired
        guard unknown.isEmpty else {
            return refuse(header.transactionID, method: method, .unknownAttribute, .unknownAttributes, to: source, signed: true, listing: unknown)
        }
        // RFC 8445 section 6.1.1: against a full agent a lite one is always controlled, so a peer
        // that says it is controlled too is told so, whatever the tie-breakers.
        guard request.iceControlled == nil else {
            return refuse(header.transactionID, method: method, .roleConflict, .roleConflict, to: source, signed: true)
        }

        var actions: [Action] = [.send(success(header.transactionID, to: source), to: source)]
        if request.useCandidate && selected != source {
            selected = source
            lastConsent = now
            actions.append(.selected(source))
        } else if source == selected {
            lastConsent = now
        }
        return actions
    }

    /// RFC 8445 section 7.2.2: the receiver's ufrag, a colon, the sender's.
    private func usernameIsOurs(_ username: [UInt8]) -> Bool {
        guard let (ours, theirs) = STUNMessage.splitUsername(username) else { return false }
        return ours.elementsEqual(localUfrag) && (remoteUfrag.isEmpty || theirs.elementsEqual(remoteUfrag))
    }

    /// RFC 8489 section 6.3.1.1 (and RFC 8445 section 7.3.1.2): the source address as it reached us.
    private func success(_ transactionID: STUNTransactionID, to source: TransportAddress) -> [UInt8] {
        STUNMessage(method: STUNMessage.binding, messageClass: .successResponse, transactionID: transactionID,
                    attributes: [.xorMappedAddress(source)])
            .signed(integrityKey: integrityKey)
    }

    private func refuse(
        _ transactionID: STUNTransactionID, method: UInt16, _ code: STUNErrorCode, _ refusal: Refusal,
        to source: TransportAddress, signed: Bool, listing unknown: [UInt16] = []
    ) -> [Action] {
        var attributes: [STUNAttribute] = [.errorCode(code)]
        if !unknown.isEmpty { attributes.append(.unknownAttributes(unknown)) }
        let response = STUNMessage(method: method, messageClass: .errorResponse, transactionID: transactionID, attributes: attributes)
        return [.send(response.signed(integrityKey: signed ? integrityKey : nil), to: source), .refused(refusal)]
    }
}
