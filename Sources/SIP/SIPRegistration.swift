/// Parley's registration with a trunk (RFC 3261 section 10.2), for providers that send calls to
/// a registered contact and accept calls out only from one: a value, its clock an input. It sends
/// REGISTER (its Via the user agent's to add), answers a digest challenge once per attempt,
/// takes the registrar's grant (the Contact's `expires`, else Expires, section 10.2.4), refreshes
/// at half of it, and after a failure tries again later (a 423's Min-Expires at once).
package struct SIPRegistration: Sendable {
    package enum Action: Sendable, Equatable {
        /// A REGISTER to send (a client non-invite transaction of its own).
        case send(SIPMessage)
        /// The registrar holds our contact for `seconds`.
        case registered(seconds: Int)
        /// The attempt failed (`status`: the registrar's, nil for no response); it is tried again.
        case failed(status: Int?, retryInSeconds: Int)
        /// The contact is removed (the unregistration was answered, or given up on).
        case unregistered
    }

    package enum State: Sendable, Equatable {
        case idle
        case registering
        case registered(until: UInt64)
        case waiting
        case unregistering
        case unregistered
    }

    /// The registrar's URI (the Request-URI), the address of record (To and From), our Contact.
    private let registrar: SIPURI
    private let addressOfRecord: SIPURI
    private let contact: String
    private let callID: String
    private let localTag: String
    private let credentials: (username: String, password: String)?
    package private(set) var askedSeconds: Int
    package private(set) var state = State.idle
    private var cseq = 0
    private var answeredChallenge = false
    /// When to refresh or try again.
    package private(set) var nextDeadline: UInt64?

    /// After a failure with no Retry-After, the next attempt waits this long.
    package static let retrySeconds = 60

    package init(registrar: SIPURI, addressOfRecord: SIPURI, contact: String, callID: String, localTag: String,
                 credentials: (username: String, password: String)?, seconds: Int) {
        self.registrar = registrar
        self.addressOfRecord = addressOfRecord
        self.contact = contact
        self.callID = callID
        self.localTag = localTag
        self.credentials = credentials
        askedSeconds = seconds
    }

    /// The first REGISTER.
    package mutating func start(now: UInt64) -> [Action] {
        register(seconds: askedSeconds, now: now)
    }

    /// The REGISTER's final response, or nil when none came (the transaction timed out).
    package mutating func received(_ response: SIPMessage?, now: UInt64) -> [Action] {
        guard state == .registering || state == .unregistering else { return [] }
        let unregistering = state == .unregistering
        guard let response, let status = response.status else {
            return unregistering ? finishUnregistering() : failed(status: nil, retry: Self.retrySeconds, now: now)
        }
        switch status {
        case 200..<300:
            if unregistering { return finishUnregistering() }
            // The grant for our contact, else the Expires header, else what we asked.
            let mine = SIPNameAddress(contact)?.uri
            let ours = (try? response.contacts())?.first { $0.uri.host == mine?.host && $0.uri.port == mine?.port && $0.uri.user == mine?.user }
            let granted = ours?.parameters.value("expires").flatMap { Int($0) } ?? response.value("Expires").flatMap { Int($0) } ?? askedSeconds
            guard granted > 0 else { return failed(status: status, retry: Self.retrySeconds, now: now) }
            answeredChallenge = false
            state = .registered(until: now &+ UInt64(granted) * 1_000_000_000)
            // Refreshed at half the grant, so that a lost refresh has time to be retried.
            nextDeadline = now &+ UInt64(max(granted / 2, 1)) * 1_000_000_000
            return [.registered(seconds: granted)]
        case 401, 407:
            let header = status == 407 ? "Proxy-Authenticate" : "WWW-Authenticate"
            guard let credentials, let challenge = response.values(header).lazy.compactMap(SIPDigestChallenge.init).first,
                  !answeredChallenge || challenge.stale else {
                return unregistering ? finishUnregistering() : failed(status: status, retry: Self.retrySeconds, now: now)
            }
            answeredChallenge = true
            let answer = SIPDigestCredentials.answering(challenge, method: "REGISTER", uri: registrar.description, username: credentials.username,
                                                        password: credentials.password, cnonce: localTag)
            return [.send(request(seconds: unregistering ? 0 : askedSeconds, authorization: (status == 407 ? "Proxy-Authorization" : "Authorization", answer.headerValue)))]
        case 423 where !unregistering:
            // Interval Too Brief (section 10.3): again at once, for the registrar's least.
            guard let least = response.value("Min-Expires").flatMap({ Int($0) }), least > askedSeconds, least <= 86_400 else {
                return failed(status: status, retry: Self.retrySeconds, now: now)
            }
            askedSeconds = least
            return register(seconds: least, now: now)
        default:
            if unregistering { return finishUnregistering() }
            let retry = response.value("Retry-After").flatMap { Int($0.prefix { $0.isNumber }) }.map { min(max($0, 1), 3_600) } ?? Self.retrySeconds
            return failed(status: status, retry: retry, now: now)
        }
    }

    /// The refresh (or the next attempt) is due.
    package mutating func fire(now: UInt64) -> [Action] {
        guard let deadline = nextDeadline, now >= deadline else { return [] }
        switch state {
        case .registered, .waiting: return register(seconds: askedSeconds, now: now)
        default: return []
        }
    }

    /// The server stops: the contact is removed (Expires 0, section 10.2.2), when it was registered.
    package mutating func unregister() -> [Action] {
        guard case .registered = state else {
            state = .unregistered
            nextDeadline = nil
            return []
        }
        state = .unregistering
        nextDeadline = nil
        answeredChallenge = false
        return [.send(request(seconds: 0, authorization: nil))]
    }

    private mutating func register(seconds: Int, now: UInt64) -> [Action] {
        state = .registering
        nextDeadline = nil
        answeredChallenge = false
        return [.send(request(seconds: seconds, authorization: nil))]
    }

    private mutating func failed(status: Int?, retry seconds: Int, now: UInt64) -> [Action] {
        state = .waiting
        answeredChallenge = false
        nextDeadline = now &+ UInt64(seconds) * 1_000_000_000
        return [.failed(status: status, retryInSeconds: seconds)]
    }

    private mutating func finishUnregistering() -> [Action] {
        state = .unregistered
        return [.unregistered]
    }

    /// A REGISTER: one Call-ID for every one of ours (section 10.2), its CSeq one more each time.
    private mutating func request(seconds: Int, authorization: (name: String, value: String)?) -> SIPMessage {
        cseq += 1
        var register = SIPMessage(.request(method: "REGISTER", uri: registrar))
        register.add("Max-Forwards", "70")
        var from = SIPNameAddress(uri: addressOfRecord)
        from.tag = localTag
        register.add("From", from.description)
        register.add("To", SIPNameAddress(uri: addressOfRecord).description)
        register.add("Call-ID", callID)
        register.add("CSeq", "\(cseq) REGISTER")
        register.add("Contact", contact)
        register.add("Expires", "\(seconds)")
        if let authorization { register.add(authorization.name, authorization.value) }
        register.add("Content-Length", "0")
        return register
    }
}
