import Media
import Testing
@testable import WebRTC

struct STUNMessageTests {
    private let id = STUNTransactionID(octets: STUNTestVectors.transactionID)!

    // RFC 5769's vectors.

    @Test func theSampleRequestParsesWithItsICEAttributes() throws {
        let message = try STUNMessage(parsing: STUNTestVectors.request)
        #expect(message.method == STUNMessage.binding)
        #expect(message.messageClass == .request)
        #expect(message.transactionID == id)
        #expect(message.username == Array("evtj:h6vY".utf8))
        #expect(message.priority == 0x6E00_01FF)
        #expect(message.iceControlled == 0x932F_F9B1_5126_3B36)
        #expect(message.iceControlling == nil)
        #expect(!message.useCandidate)
        #expect(message.fingerprint == 0xE57A_3BCF)
        #expect(message.attributes.first == .other(type: 0x8022, value: Array("STUN test client".utf8)))
        // SOFTWARE is comprehension-optional, so nothing there calls for a 420.
        #expect(message.unknownComprehensionRequired.isEmpty)
    }

    @Test func theSampleRequestsIntegrityAndFingerprintVerify() {
        #expect(STUNMessage.integrityIsValid(STUNTestVectors.request, key: STUNTestVectors.password))
        #expect(STUNMessage.fingerprintIsValid(STUNTestVectors.request))
    }

    @Test func integrityUnderAnotherPasswordFails() {
        #expect(!STUNMessage.integrityIsValid(STUNTestVectors.request, key: Array("VOkJxbRl1RmTxUk/WvJxBu".utf8)))
    }

    @Test func aFlippedBitFailsBothIntegrityAndFingerprint() {
        var bytes = STUNTestVectors.request
        bytes[30] ^= 0x01  // inside SOFTWARE
        #expect(!STUNMessage.integrityIsValid(bytes, key: STUNTestVectors.password))
        #expect(!STUNMessage.fingerprintIsValid(bytes))
    }

    @Test func theSampleIPv4ResponseCarries192_0_2_1Port32853() throws {
        let message = try STUNMessage(parsing: STUNTestVectors.ipv4Response)
        #expect(message.messageClass == .successResponse)
        #expect(message.xorMappedAddress == .ipv4(192, 0, 2, 1, port: 32853))
        #expect(STUNMessage.integrityIsValid(STUNTestVectors.ipv4Response, key: STUNTestVectors.password))
        #expect(STUNMessage.fingerprintIsValid(STUNTestVectors.ipv4Response))
    }

    @Test func theSampleIPv6ResponseCarriesItsAddressXORedWithCookieAndTransactionID() throws {
        let message = try STUNMessage(parsing: STUNTestVectors.ipv6Response)
        let expected = TransportAddress(
            octets: [0x20, 0x01, 0x0D, 0xB8, 0x12, 0x34, 0x56, 0x78, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77], port: 32853)
        #expect(message.xorMappedAddress == expected)
        #expect(message.xorMappedAddress?.description == "[2001:db8:1234:5678:11:2233:4455:6677]:32853")
        #expect(STUNMessage.integrityIsValid(STUNTestVectors.ipv6Response, key: STUNTestVectors.password))
        #expect(STUNMessage.fingerprintIsValid(STUNTestVectors.ipv6Response))
    }

    @Test func theXORMappedAddressIsWrittenAsTheVectorHasIt() {
        let v4 = STUNMessage(method: STUNMessage.binding, messageClass: .successResponse, transactionID: id,
                             attributes: [.xorMappedAddress(.ipv4(192, 0, 2, 1, port: 32853))]).encoded()
        #expect(Array(v4[20...]) == Array(STUNTestVectors.ipv4Response[36..<48]))
        let address = try? STUNMessage(parsing: STUNTestVectors.ipv6Response).xorMappedAddress
        let v6 = STUNMessage(method: STUNMessage.binding, messageClass: .successResponse, transactionID: id,
                             attributes: [.xorMappedAddress(address!)]).encoded()
        #expect(Array(v6[20...]) == Array(STUNTestVectors.ipv6Response[36..<60]))
    }

    /// The vectors pad with spaces; written with zero padding, the same attributes' HMAC is the one
    /// libwebrtc's stunmessage tests give (kCalculatedHmac1 and 2), and FINGERPRINT follows it.
    @Test func signingWithZeroPaddingGivesTheKnownHMACs() throws {
        var request = try STUNMessage(parsing: STUNTestVectors.request)
        request.attributes.removeAll { if case .fingerprint = $0 { true } else { false } }
        let signedRequest = request.signed(integrityKey: STUNTestVectors.password, fingerprint: false)
        #expect(Array(signedRequest.suffix(20)) == [
            0x79, 0x07, 0xC2, 0xD2, 0xED, 0xBF, 0xEA, 0x48, 0x0E, 0x4C, 0x76, 0xD8, 0x29, 0x62, 0xD5, 0xC3, 0x74, 0x2A, 0xF9, 0xE3,
        ])
        let response = try STUNMessage(parsing: STUNTestVectors.ipv4Response)
        let signedResponse = response.signed(integrityKey: STUNTestVectors.password, fingerprint: false)
        #expect(Array(signedResponse.suffix(20)) == [
            0x5D, 0x6B, 0x58, 0xBE, 0xAD, 0x94, 0xE0, 0x7E, 0xEF, 0x0D, 0xFC, 0x12, 0x82, 0xA2, 0xBD, 0x08, 0x43, 0x14, 0x10, 0x28,
        ])
    }

    @Test func aSignedMessageVerifiesAndParsesBack() throws {
        let message = STUNMessage(method: STUNMessage.binding, messageClass: .request, transactionID: id,
                                  attributes: [.username(Array("abcd:efgh".utf8)), .priority(7), .iceControlling(tieBreaker: 9), .useCandidate])
        let bytes = message.signed(integrityKey: Array("pass".utf8))
        #expect(STUNMessage.integrityIsValid(bytes, key: Array("pass".utf8)))
        #expect(STUNMessage.fingerprintIsValid(bytes))
        let parsed = try STUNMessage(parsing: bytes)
        #expect(Array(parsed.attributes.prefix(4)) == message.attributes)
        #expect(parsed.attributes.count == 6)
    }

    // Round trips and the header.

    @Test func everyAttributeKindWritesBackToItself() throws {
        let v6 = TransportAddress(ip: .v6(high: 0xFE80_0000_0000_0000, low: 0x0000_0000_0000_0001), port: 1)
        let message = STUNMessage(method: STUNMessage.binding, messageClass: .errorResponse, transactionID: id, attributes: [
            .username(Array("a:b".utf8)), .xorMappedAddress(.ipv4(10, 0, 0, 1, port: 9)), .xorMappedAddress(v6),
            .errorCode(.roleConflict), .unknownAttributes([0x0003, 0x7FFF, 0x0001]), .priority(1), .useCandidate,
            .iceControlled(tieBreaker: .max), .iceControlling(tieBreaker: 0), .other(type: 0x8022, value: [1, 2, 3, 4, 5]),
            .messageIntegrity([UInt8](repeating: 7, count: 20)), .fingerprint(0xDEAD_BEEF),
        ])
        let bytes = message.encoded()
        #expect(bytes.count % 4 == 0)
        #expect(try STUNMessage(parsing: bytes) == message)
    }

    @Test func theMessageTypeInterleavesMethodAndClassBits() {
        #expect(STUNMessage.type(method: 1, messageClass: .request) == 0x0001)
        #expect(STUNMessage.type(method: 1, messageClass: .indication) == 0x0011)
        #expect(STUNMessage.type(method: 1, messageClass: .successResponse) == 0x0101)
        #expect(STUNMessage.type(method: 1, messageClass: .errorResponse) == 0x0111)
        for method: UInt16 in [0, 1, 0x0FFF, 0x0ABC] {
            for messageClass in [STUNMessage.Class.request, .indication, .successResponse, .errorResponse] {
                let (m, c) = STUNMessage.split(type: STUNMessage.type(method: method, messageClass: messageClass))
                #expect(m == method && c == messageClass)
            }
        }
    }

    @Test func headerFaultsAreNotSTUN() {
        func error(_ bytes: [UInt8]) -> STUNParseError? {
            do { _ = try STUNMessage(parsing: bytes); return nil } catch { return error }
        }
        let valid = STUNMessage(method: 1, messageClass: .request, transactionID: id).encoded()
        #expect(error(Array(valid.prefix(19))) == .tooShort(19))
        var topBits = valid; topBits[0] |= 0x40
        #expect(error(topBits) == .notSTUN)
        var cookie = valid; cookie[7] = 0x43
        #expect(error(cookie) == .notSTUN)
        #expect(error(valid + [0, 0, 0, 0]) == .lengthMismatch(declared: 0, actual: 4))
        var unaligned = valid + [0, 0]; unaligned[3] = 2
        #expect(error(unaligned) == .unalignedLength(2))
        var long = valid + [UInt8](repeating: 0x80, count: 1484); long[2] = 0x05; long[3] = 0xCC
        #expect(error(long) == .tooLong(1504))
        for bytes in [Array(valid.prefix(19)), topBits, cookie, long] { #expect(error(bytes)?.isHeaderError == true) }
    }

    @Test func aDatagramOf1500BytesIsStillRead() throws {
        var bytes = STUNMessage(method: 1, messageClass: .indication, transactionID: id).encoded()
        bytes += [0x80, 0x22, 0x05, 0xC4] + [UInt8](repeating: 0x61, count: 1476)
        STUNWire.setLength(bytes.count - 20, in: &bytes)
        #expect(bytes.count == 1500)
        #expect(try STUNMessage(parsing: bytes).attributes.count == 1)
    }

    @Test func anAttributeRunningPastTheEndIsRefused() {
        var bytes = STUNMessage(method: 1, messageClass: .request, transactionID: id).encoded() + [0x00, 0x06, 0x00, 0x09, 0x61, 0x62, 0x63, 0x64]
        STUNWire.setLength(8, in: &bytes)
        #expect(throws: STUNParseError.truncatedAttribute(offset: 20)) { try STUNMessage(parsing: bytes) }
        #expect((try? STUNMessage(parsing: bytes)) == nil)
    }

    @Test func knownAttributesOfTheWrongLengthAreRefused() {
        for (type, length) in [(STUNAttribute.Code.priority, 3), (STUNAttribute.Code.useCandidate, 4), (STUNAttribute.Code.messageIntegrity, 16),
                               (STUNAttribute.Code.iceControlling, 4), (STUNAttribute.Code.fingerprint, 8), (STUNAttribute.Code.unknownAttributes, 3)] {
            let message = STUNMessage(method: 1, messageClass: .request, transactionID: id,
                                      attributes: [.other(type: type, value: [UInt8](repeating: 0, count: length))])
            #expect(throws: STUNParseError.badAttributeLength(type: type, length: length)) { try STUNMessage(parsing: message.encoded()) }
        }
    }

    @Test func anAddressOfAnUnknownFamilyIsRefused() {
        let message = STUNMessage(method: 1, messageClass: .successResponse, transactionID: id,
                                  attributes: [.other(type: STUNAttribute.Code.xorMappedAddress, value: [0, 3, 0, 0, 0, 0, 0, 0])])
        #expect(throws: STUNParseError.unknownAddressFamily(3)) { try STUNMessage(parsing: message.encoded()) }
    }

    @Test func anErrorCodeOutside300To699IsRefused() {
        let message = STUNMessage(method: 1, messageClass: .errorResponse, transactionID: id,
                                  attributes: [.other(type: STUNAttribute.Code.errorCode, value: [0, 0, 2, 0])])
        #expect(throws: STUNParseError.errorCodeOutOfRange(errorClass: 2, number: 0)) { try STUNMessage(parsing: message.encoded()) }
    }

    @Test func anAttributeAfterFingerprintIsRefused() {
        let message = STUNMessage(method: 1, messageClass: .request, transactionID: id, attributes: [.fingerprint(0), .priority(1)])
        #expect(throws: STUNParseError.fingerprintNotLast) { try STUNMessage(parsing: message.encoded()) }
    }

    @Test func attributesAfterMessageIntegrityButFingerprintAreIgnored() throws {
        let integrity = STUNAttribute.messageIntegrity([UInt8](repeating: 1, count: 20))
        let message = STUNMessage(method: 1, messageClass: .request, transactionID: id,
                                  attributes: [.priority(1), integrity, .useCandidate, .other(type: 0x0777, value: []), .fingerprint(5)])
        #expect(try STUNMessage(parsing: message.encoded()).attributes == [.priority(1), integrity, .fingerprint(5)])
    }

    @Test func unknownComprehensionRequiredAttributesAreListedOnce() throws {
        let message = STUNMessage(method: 1, messageClass: .request, transactionID: id, attributes: [
            .other(type: 0x7FFF, value: []), .other(type: 0x8FFF, value: []), .other(type: 0x0003, value: [1]), .other(type: 0x7FFF, value: [2]),
        ])
        #expect(try STUNMessage(parsing: message.encoded()).unknownComprehensionRequired == [0x7FFF, 0x0003])
    }

    // USERNAME.

    @Test func theUsernamePrefixIsOurUfragWithoutParsingTheRest() {
        #expect(STUNMessage.usernamePrefix(STUNTestVectors.request).map(Array.init) == Array("evtj".utf8))
        let prefix = STUNTestVectors.request.withUnsafeBytes { STUNMessage.usernamePrefix($0).map(Array.init) }
        #expect(prefix == Array("evtj".utf8))
    }

    @Test func thereIsNoUsernamePrefixWithoutSTUNAUsernameOrAColon() {
        #expect(STUNMessage.usernamePrefix([0x80, 0x00] + [UInt8](repeating: 0, count: 30)) == nil)
        #expect(STUNMessage.usernamePrefix(STUNTestVectors.ipv4Response) == nil)
        let noColon = STUNMessage(method: 1, messageClass: .request, transactionID: id, attributes: [.username(Array("abcd".utf8))])
        #expect(STUNMessage.usernamePrefix(noColon.encoded()) == nil)
    }

    @Test func aUsernameSplitsAtItsFirstColon() {
        let split = STUNMessage.splitUsername(Array("ab:cd:ef".utf8))
        #expect(split.map { Array($0.ours) } == Array("ab".utf8))
        #expect(split.map { Array($0.theirs) } == Array("cd:ef".utf8))
        #expect(STUNMessage.splitUsername(Array("abcd".utf8)) == nil)
    }
}
