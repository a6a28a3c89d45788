import Media
import Testing
@testable import WebRTC

struct ICELiteAgentTests {
    private let local = ICECredentials(ufrag: "ours1234", password: "our+password/of/24chars0")
    private let remote = ICECredentials(ufrag: "brws", password: "browser-password-22chars")
    private let browser = TransportAddress.ipv4(192, 0, 2, 10, port: 50_000)
    private let second = TransportAddress.ipv4(198, 51, 100, 7, port: 61_000)
    private static let second_ns: UInt64 = 1_000_000_000

    private func agent(now: UInt64 = 0) -> ICELiteAgent {
        ICELiteAgent(local: local, remote: remote, now: now)
    }

    /// A check as a browser sends it: USERNAME "ours:theirs", PRIORITY, ICE-CONTROLLING, signed
    /// with our password, FINGERPRINT last.
    private func check(
        id: UInt32 = 1, username: String? = nil, password: String? = nil, nominate: Bool = false,
        extra: [STUNAttribute] = [], role: STUNAttribute = .iceControlling(tieBreaker: 42), integrity: Bool = true
    ) -> [UInt8] {
        var attributes: [STUNAttribute] = [.username(Array((username ?? "\(local.ufrag):\(remote.ufrag)").utf8)), .priority(0x6E00_01FF), role]
        if nominate { attributes.append(.useCandidate) }
        attributes += extra
        let message = STUNMessage(method: STUNMessage.binding, messageClass: .request, transactionID: STUNTransactionID(high: id, low: 7), attributes: attributes)
        return message.signed(integrityKey: integrity ? Array((password ?? local.password).utf8) : nil)
    }

    private func response(_ actions: [ICELiteAgent.Action]) -> (bytes: [UInt8], message: STUNMessage)? {
        for case .send(let bytes, _) in actions {
            guard let message = try? STUNMessage(parsing: bytes) else { return nil }
            return (bytes, message)
        }
        return nil
    }

    // Answers.

    @Test func aValidCheckIsAnsweredWithTheSourceAddressUnderOurPassword() throws {
        var agent = agent()
        let actions = agent.receive(check(id: 99), from: browser, now: 1)
        #expect(actions.count == 1)
        guard case .send(_, let to) = actions.first else { Issue.record("no answer"); return }
        #expect(to == browser)
        let (bytes, message) = try #require(response(actions))
        #expect(message.messageClass == .successResponse && message.method == STUNMessage.binding)
        #expect(message.transactionID == STUNTransactionID(high: 99, low: 7))
        #expect(message.xorMappedAddress == browser)
        #expect(STUNMessage.integrityIsValid(bytes, key: Array(local.password.utf8)))
        #expect(STUNMessage.fingerprintIsValid(bytes))
    }

    @Test func anIPv6SourceIsReflectedAsIPv6() throws {
        var agent = agent()
        let source = TransportAddress(ip: .v6(high: 0x2001_0DB8_0000_0000, low: 1), port: 9)
        let actions = agent.receive(check(), from: source, now: 1)
        #expect(try #require(response(actions)).message.xorMappedAddress == source)
    }

    @Test func aCheckWithoutUseCandidateSelectsNothing() {
        var agent = agent()
        let actions = agent.receive(check(), from: browser, now: 1)
        #expect(!actions.contains(.selected(browser)))
        #expect(agent.selected == nil)
    }

    // Nomination.

    @Test func aNominatingCheckSelectsItsSource() {
        var agent = agent()
        let actions = agent.receive(check(nominate: true), from: browser, now: 1)
        #expect(actions.count == 2)
        #expect(actions.last == .selected(browser))
        #expect(agent.selected == browser)
    }

    @Test func nominatingTheSameAddressAgainIsNotReportedAgain() {
        var agent = agent()
        _ = agent.receive(check(nominate: true), from: browser, now: 1)
        let again = agent.receive(check(id: 2, nominate: true), from: browser, now: 2)
        #expect(again.count == 1)
        #expect(agent.selected == browser)
    }

    @Test func aNominationFromANewAddressMovesTheSelection() {
        var agent = agent()
        _ = agent.receive(check(nominate: true), from: browser, now: 1)
        let unnominated = agent.receive(check(id: 2), from: second, now: 2)
        #expect(!unnominated.contains(.selected(second)))
        #expect(agent.selected == browser)
        let moved = agent.receive(check(id: 3, nominate: true), from: second, now: 3)
        #expect(moved.last == .selected(second))
        #expect(agent.selected == second)
    }

    // Refusals.

    @Test func aBindingRequestWithAWrongPasswordIsRefused401WithoutIntegrity() throws {
        var agent = agent()
        let actions = agent.receive(check(password: "not-our-password-at-all"), from: browser, now: 1)
        let (bytes, message) = try #require(response(actions))
        #expect(message.messageClass == .errorResponse)
        #expect(message.errorCode?.code == 401)
        #expect(message.messageIntegrity == nil)
        #expect(STUNMessage.fingerprintIsValid(bytes))
        #expect(actions.last == .refused(.unauthorized))
        #expect(agent.selected == nil)
    }

    @Test func aCheckForAnotherUfragIsRefused401() throws {
        var agent = agent()
        let actions = agent.receive(check(username: "other123:\(remote.ufrag)", nominate: true), from: browser, now: 1)
        #expect(try #require(response(actions)).message.errorCode?.code == 401)
        #expect(agent.selected == nil)
    }

    @Test func aCheckFromAnotherBrowsersUfragIsRefused401() throws {
        var agent = agent()
        let actions = agent.receive(check(username: "\(local.ufrag):zzzz"), from: browser, now: 1)
        #expect(try #require(response(actions)).message.errorCode?.code == 401)
    }

    @Test func aUsernameWithoutAColonIsRefused401() throws {
        var agent = agent()
        let actions = agent.receive(check(username: local.ufrag), from: browser, now: 1)
        #expect(try #require(response(actions)).message.errorCode?.code == 401)
    }

    @Test func aRequestWithoutMessageIntegrityIsRefused400() throws {
        var agent = agent()
        let actions = agent.receive(check(nominate: true, integrity: false), from: browser, now: 1)
        let (_, message) = try #require(response(actions))
        #expect(message.errorCode?.code == 400)
        #expect(message.messageIntegrity == nil)
        #expect(actions.last == .refused(.malformed))
        #expect(agent.selected == nil)
    }

    @Test func aRequestWithAMalformedAttributeIsRefused400() throws {
        var agent = agent()
        let bad = check(extra: [.other(type: STUNAttribute.Code.priority, value: [1, 2, 3])])
        let actions = agent.receive(bad, from: browser, now: 1)
        let (_, message) = try #require(response(actions))
        #expect(message.errorCode?.code == 400)
        #expect(message.transactionID == STUNTransactionID(high: 1, low: 7))
        #expect(actions.last == .refused(.malformed))
    }

    @Test func aRequestForAnotherMethodIsRefused400() throws {
        var agent = agent()
        let allocate = STUNMessage(method: 0x003, messageClass: .request, transactionID: STUNTransactionID(high: 1, low: 1))
            .signed(integrityKey: Array(local.password.utf8))
        let (_, message) = try #require(response(agent.receive(allocate, from: browser, now: 1)))
        #expect(message.method == 0x003 && message.errorCode?.code == 400)
    }

    @Test func unknownComprehensionRequiredAttributesAreRefused420AndListed() throws {
        var agent = agent()
        let actions = agent.receive(check(nominate: true, extra: [.other(type: 0x7ABC, value: [0]), .other(type: 0xC001, value: [])]), from: browser, now: 1)
        let (bytes, message) = try #require(response(actions))
        #expect(message.errorCode?.code == 420)
        #expect(message.attributes.contains(.unknownAttributes([0x7ABC])))
        // Authenticated, so the refusal carries our integrity (RFC 8489 section 9.1.4).
        #expect(STUNMessage.integrityIsValid(bytes, key: Array(local.password.utf8)))
        #expect(actions.last == .refused(.unknownAttributes))
        #expect(agent.selected == nil)
    }

    @Test func aPeerClaimingTheControlledRoleIsRefused487() throws {
        var agent = agent()
        let actions = agent.receive(check(nominate: true, role: .iceControlled(tieBreaker: 1)), from: browser, now: 1)
        let (bytes, message) = try #require(response(actions))
        #expect(message.errorCode?.code == 487)
        #expect(STUNMessage.integrityIsValid(bytes, key: Array(local.password.utf8)))
        #expect(actions.last == .refused(.roleConflict))
        #expect(agent.selected == nil)
    }

    @Test func aBadFingerprintIsDroppedUnanswered() {
        var agent = agent()
        var bytes = check(nominate: true)
        bytes[bytes.count - 1] ^= 0xFF
        #expect(agent.receive(bytes, from: browser, now: 1) == [.refused(.badFingerprint)])
        #expect(agent.selected == nil)
    }

    @Test func whatIsNotSTUNIsDroppedUnanswered() {
        var agent = agent()
        #expect(agent.receive([0x16, 0xFE, 0xFD] + [UInt8](repeating: 0, count: 40), from: browser, now: 1) == [.refused(.notSTUN)])
        #expect(agent.receive([0, 1, 0], from: browser, now: 1) == [.refused(.notSTUN)])
    }

    @Test func indicationsAndResponsesAreIgnored() {
        var agent = agent()
        let indication = STUNMessage(method: STUNMessage.binding, messageClass: .indication, transactionID: STUNTransactionID(high: 1, low: 1)).signed(integrityKey: nil)
        #expect(agent.receive(indication, from: browser, now: 1).isEmpty)
        #expect(agent.receive(STUNTestVectors.ipv4Response, from: browser, now: 1).isEmpty)
    }

    // Consent and set-up.

    @Test func consentExpiresThirtySecondsAfterTheLastCheckFromTheSelectedAddress() {
        var agent = agent()
        _ = agent.receive(check(nominate: true), from: browser, now: 1 * Self.second_ns)
        _ = agent.receive(check(id: 2), from: browser, now: 10 * Self.second_ns)
        #expect(agent.deadline == 40 * Self.second_ns)
        #expect(agent.tick(now: 39 * Self.second_ns) == nil)
        #expect(agent.tick(now: 40 * Self.second_ns) == .expired)
        #expect(agent.isExpired)
    }

    @Test func checksFromAnotherAddressDoNotRefreshConsent() {
        var agent = agent()
        _ = agent.receive(check(nominate: true), from: browser, now: 1 * Self.second_ns)
        _ = agent.receive(check(id: 2), from: second, now: 20 * Self.second_ns)
        #expect(agent.tick(now: 31 * Self.second_ns) == .expired)
    }

    @Test func refusedChecksDoNotRefreshConsent() {
        var agent = agent()
        _ = agent.receive(check(nominate: true), from: browser, now: 1 * Self.second_ns)
        _ = agent.receive(check(id: 2, password: "wrong-password-wrong-pw"), from: browser, now: 20 * Self.second_ns)
        #expect(agent.tick(now: 31 * Self.second_ns) == .expired)
    }

    /// libnice's way (GStreamer's webrtcbin): one nominating check, then Binding indications and
    /// media only. The media's authentication keeps the call; the indications do not.
    @Test func authenticatedTrafficFromTheSelectedAddressRefreshesConsentAndIndicationsDoNot() {
        var agent = agent()
        _ = agent.receive(check(nominate: true), from: browser, now: 1 * Self.second_ns)
        let indication = STUNMessage(method: STUNMessage.binding, messageClass: .indication, transactionID: STUNTransactionID(high: 3, low: 3)).signed(integrityKey: nil)
        for second: UInt64 in stride(from: 5, through: 60, by: 5) {
            #expect(agent.receive(indication, from: browser, now: second * Self.second_ns).isEmpty)
            agent.authenticated(from: browser, now: second * Self.second_ns)
            #expect(agent.tick(now: second * Self.second_ns) == nil)
        }
        #expect(agent.deadline == 90 * Self.second_ns)
        // Indications alone from then on: consent runs out 30 s after the last media.
        for second: UInt64 in stride(from: 65, through: 85, by: 5) {
            _ = agent.receive(indication, from: browser, now: second * Self.second_ns)
        }
        #expect(agent.tick(now: 89 * Self.second_ns) == nil)
        #expect(agent.tick(now: 90 * Self.second_ns) == .expired)
    }

    @Test func authenticatedTrafficCountsOnlyFromTheSelectedAddressAndOnlyOnceSelected() {
        var unselected = agent()
        unselected.authenticated(from: browser, now: 10 * Self.second_ns)
        #expect(unselected.deadline == 15 * Self.second_ns, "the set-up deadline stands")
        var selected = agent()
        _ = selected.receive(check(nominate: true), from: browser, now: 1 * Self.second_ns)
        selected.authenticated(from: second, now: 20 * Self.second_ns)
        #expect(selected.tick(now: 31 * Self.second_ns) == .expired)
    }

    @Test func withoutANominationTheAgentExpiresAfterTheSetupTimeout() {
        var agent = agent(now: 5 * Self.second_ns)
        _ = agent.receive(check(), from: browser, now: 6 * Self.second_ns)
        #expect(agent.tick(now: 19 * Self.second_ns) == nil)
        #expect(agent.tick(now: 20 * Self.second_ns) == .expired)
    }

    @Test func theTimeoutsAreSettings() {
        var settings = ICELiteAgent.Settings()
        settings.setupTimeout = 2 * Self.second_ns
        settings.consentTimeout = 3 * Self.second_ns
        var agent = ICELiteAgent(local: local, remote: remote, now: 0, settings: settings)
        #expect(agent.deadline == 2 * Self.second_ns)
        _ = agent.receive(check(nominate: true), from: browser, now: 1 * Self.second_ns)
        #expect(agent.deadline == 4 * Self.second_ns)
    }

    @Test func expiryIsReportedOnceAndThenEverythingIsIgnored() {
        var agent = agent()
        #expect(agent.tick(now: 15 * Self.second_ns) == .expired)
        #expect(agent.tick(now: 16 * Self.second_ns) == nil)
        #expect(agent.deadline == nil)
        #expect(agent.receive(check(nominate: true), from: browser, now: 17 * Self.second_ns).isEmpty)
        #expect(agent.selected == nil)
    }

    /// A check signed by another implementation (Python's hmac and zlib, Fuzz/corpus/stun's
    /// nominating-check seed) under RFC 5769's password, to the agent holding those credentials.
    @Test func aCheckSignedElsewhereIsAcceptedAndNominates() throws {
        let bytes: [UInt8] = [
            0x00, 0x01, 0x00, 0x48, 0x21, 0x12, 0xA4, 0x42, 0x01, 0x02, 0x03, 0x04,
            0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x00, 0x06, 0x00, 0x09,
            0x65, 0x76, 0x74, 0x6A, 0x3A, 0x68, 0x36, 0x76, 0x59, 0x00, 0x00, 0x00,
            0x00, 0x24, 0x00, 0x04, 0x6E, 0x00, 0x01, 0xFF, 0x80, 0x2A, 0x00, 0x08,
            0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x00, 0x25, 0x00, 0x00,
            0x00, 0x08, 0x00, 0x14, 0xC5, 0x10, 0xEF, 0x02, 0x18, 0x94, 0x1C, 0xA7,
            0x96, 0x42, 0x8A, 0x90, 0x26, 0x21, 0x4C, 0xD9, 0x53, 0xE0, 0x4E, 0x4F,
            0x80, 0x28, 0x00, 0x04, 0x16, 0x86, 0xDE, 0x1C,
        ]
        var agent = ICELiteAgent(
            local: ICECredentials(ufrag: "evtj", password: "VOkJxbRl1RmTxUk/WvJxBt"),
            remote: ICECredentials(ufrag: "h6vY", password: "browser-password-22chars"), now: 0)
        let actions = agent.receive(bytes, from: browser, now: 1)
        #expect(try #require(response(actions)).message.messageClass == .successResponse)
        #expect(actions.last == .selected(browser))
    }

    /// RFC 5769's sample request says ICE-CONTROLLED, so to a lite agent it is a role conflict.
    @Test func theRFC5769RequestIsARoleConflictToALiteAgent() throws {
        var agent = ICELiteAgent(
            local: ICECredentials(ufrag: "evtj", password: "VOkJxbRl1RmTxUk/WvJxBt"),
            remote: ICECredentials(ufrag: "h6vY", password: "browser-password-22chars"), now: 0)
        let actions = agent.receive(STUNTestVectors.request, from: browser, now: 1)
        #expect(try #require(response(actions)).message.errorCode?.code == 487)
    }

    // Credentials.

    @Test func generatedCredentialsAreIceCharsWithRFC8445sRandomness() {
        let one = ICECredentials.generate(), two = ICECredentials.generate()
        // Six bits a character: 48 bits of ufrag (at least 24), 144 of password (at least 128).
        #expect(one.ufrag.utf8.count == 8 && one.password.utf8.count == 24)
        #expect(ICECredentials.isIceCharString(one.ufrag) && ICECredentials.isIceCharString(one.password))
        #expect(one != two)
        #expect(!ICECredentials.isIceCharString("has space") && !ICECredentials.isIceCharString(""))
    }
}
