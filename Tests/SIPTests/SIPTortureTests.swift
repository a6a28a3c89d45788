import Testing
@testable import SIP

/// RFC 4475's parser tests (section 3.1): the valid messages parse with the values the RFC
/// describes, and the invalid ones are refused, each with its own reason.
@Suite struct SIPTortureTests {
    @Test(arguments: Fixture.valid + Fixture.semantic)
    func everyWellFormedTortureMessageParses(name: String) throws {
        let bytes = Fixture.bytes(name)
        #expect(!bytes.isEmpty, "fixture \(name) is missing")
        _ = try SIPMessage(datagram: bytes)
    }

    @Test func aShortTortuousInviteReadsAsTheRFCSays() throws {
        let message = try SIPMessage(datagram: Fixture.bytes("wsinv"))
        #expect(message.method == "INVITE")
        #expect(message.requestURI?.user == "vivekg" && message.requestURI?.host == "chair-dnrc.example.com")
        #expect(message.requestURI?.parameters == [SIPParameter("unknownparam")])
        let to = try message.to()
        #expect(to.displayName == nil && to.uri.user == "vivekg" && to.tag == "1918181833n")
        let from = try message.from()
        #expect(from.displayName == "J Rosenberg \\\"" && from.uri.host == "example.com" && from.tag == "98asjd8")
        #expect(try message.maxForwards() == 68)
        #expect(try message.callID() == "wsinv.ndaksdj@192.0.2.1")
        #expect(try message.cseq() == SIPCSeq(9, "INVITE"))
        let vias = try message.vias()
        #expect(vias.map(\.transport) == ["UDP", "TCP", "UDP"])
        #expect(vias.map(\.host) == ["192.0.2.2", "spindle.example.com", "192.168.255.111"])
        #expect(vias.map(\.branch) == ["390skdjuw", "z9hG4bK9ikj8", "z9hG4bK30239"])
        #expect(message.value("Subject") == "")
        #expect(message.value("NewFangledHeader") == "newfangled value continued newfangled value")
        #expect(message.value("UnknownHeaderWithUnusualValue") == ";;,,;;,;")
        #expect(try message.contentType()?.isSDP == true)
        #expect(try message.routes().first?.uri.isLooseRouter == true)
        let contact = try #require(try message.contacts().first)
        #expect(contact.displayName == "Quoted string \"\"" && contact.uri.user == "jdrosen")
        #expect(contact.parameters == [SIPParameter("newparam", "newvalue"), SIPParameter("secondparam"), SIPParameter("q", "0.33")])
        #expect(message.body.count == 150)
    }

    @Test func aWideRangeOfValidCharactersReads() throws {
        let message = try SIPMessage(datagram: Fixture.bytes("intmeth"))
        #expect(message.method == "!interesting-Method0123456789_*+`.%indeed'~")
        #expect(message.requestURI?.user == "1_unusual.URI~(to-be!sure)&isn't+it$/crazy?,/;;*")
        #expect(message.requestURI?.password == "&it+has=1,weird!*pas$wo~d_too.(doesn't-it)")
        #expect(try message.to().displayName == "BEL:\u{07} NUL:\u{00} DEL:\u{7F}")
        #expect(try message.from().displayName == "token1~` token2'+_ token3*%!.-")
        #expect(try message.from().tag == "_token~1'+`*%!-.")
        #expect(try message.callID() == "intmeth.word%ZK-!.*_+'@word`~)(><:\\/\"][?}{")
        #expect(message.value("extensionHeader-!.%*+_`'~") == "\u{FEFF}大停電")
        #expect(try message.topVia().branch == "z9hG4bK-.!%66*_+`'~")
    }

    @Test func escapesStayAsWrittenAndAnEscapedNameIsAnotherHeader() throws {
        let esc01 = try SIPMessage(datagram: Fixture.bytes("esc01"))
        #expect(esc01.requestURI?.user == "sips%3Auser%40example.com")
        #expect(try esc01.contacts().first?.uri.parameters == [SIPParameter("%6C%72"), SIPParameter("n%61me", "v%61lue%25%34%31")])
        let esc02 = try SIPMessage(datagram: Fixture.bytes("esc02"))
        #expect(esc02.method == "RE%47IST%45R")
        #expect(try esc02.contacts().count == 2)
        #expect(esc02.value("C%6Fntact") == "<sip:alias2@host2.example.com>")
        let escnull = try SIPMessage(datagram: Fixture.bytes("escnull"))
        #expect(try escnull.contacts().map { $0.uri.user } == ["%00", "%00%00"])
    }

    @Test func aDisplayNameMayTouchItsAngleBracket() throws {
        let message = try SIPMessage(datagram: Fixture.bytes("lwsdisp"))
        #expect(try message.from().displayName == "caller")
    }

    @Test func longValuesRead() throws {
        let message = try SIPMessage(datagram: Fixture.bytes("longreq"))
        #expect(try message.vias().count > 10)
        #expect(try message.to().uri.port == 6000)
    }

    @Test func aDatagramIsOneMessageAndBytesPastContentLengthAreDropped() throws {
        let message = try SIPMessage(datagram: Fixture.bytes("dblreq"))
        #expect(message.method == "REGISTER" && message.body.isEmpty)
    }

    @Test func aSemicolonInTheUserPartIsTheUsers() throws {
        let message = try SIPMessage(datagram: Fixture.bytes("semiuri"))
        #expect(message.requestURI?.user == "user;par=u%40example.net" && message.requestURI?.host == "example.com")
        #expect(message.values("Accept").count == 6)
    }

    @Test func unknownTransportsRead() throws {
        let message = try SIPMessage(datagram: Fixture.bytes("transports"))
        #expect(try message.vias().map(\.transport) == ["UDP", "SCTP", "TLS", "UNKNOWN", "TCP"])
    }

    @Test func aBinaryBodyIsKeptWhole() throws {
        let message = try SIPMessage(datagram: Fixture.bytes("mpart01"))
        #expect(message.body.count == 553)
        #expect(try message.contentType()?.parameters.value("boundary") == "7a9cbec02ceef655")
    }

    @Test func reasonPhrasesMayBeUnusualOrEmpty() throws {
        let unusual = try SIPMessage(datagram: Fixture.bytes("unreason"))
        #expect(unusual.status == 200)
        guard case .response(_, let reason) = unusual.startLine else { Issue.record("not a response"); return }
        #expect(reason.hasPrefix("= 2**3 * 5**2 ") && reason.contains("девяносто"))
        let empty = try SIPMessage(datagram: Fixture.bytes("noreason"))
        #expect(empty.startLine == .response(status: 100, reason: ""))
    }

    /// Section 3.1.2: each invalid message and why it is refused.
    static let invalid: [(String, SIPParseError)] = [
        ("badinv01", .malformedHeader("Via")),
        ("clerr", .bodyTruncated(contentLength: 9999, available: 154)),
        ("ncl", .malformedHeader("Content-Length")),
        ("scalar02", .malformedHeader("CSeq")),
        ("scalarlg", .malformedHeader("CSeq")),
        ("quotbal", .malformedHeader("To")),
        ("ltgtruri", .malformedRequestURI),
        ("lwsruri", .malformedRequestLine),
        ("lwsstart", .malformedRequestLine),
        ("trws", .malformedRequestLine),
        ("escruri", .malformedRequestURI),
        ("baddate", .malformedHeader("Date")),
        ("regbadct", .malformedHeader("Contact")),
        ("badaspec", .malformedHeader("To")),
        ("baddn", .incompleteHeaderSection),
        ("badvers", .unsupportedVersion),
        ("mismatch01", .methodMismatch),
        ("mismatch02", .methodMismatch),
        ("bigcode", .malformedStatusLine),
        // Section 3.3's messages that a parser can already refuse: 3.3.1 (From, To, Call-ID and
        // Max-Forwards missing), 3.3.8 (two Content-Lengths), 3.3.9 (two of single-valued headers).
        ("insuf", .missingHeader("From")),
        ("mcl01", .malformedHeader("Content-Length")),
        ("multi01", .malformedHeader("From")),
    ]

    @Test(arguments: invalid)
    func everyInvalidTortureMessageIsRefusedWithItsReason(name: String, expected: SIPParseError) {
        #expect(throws: expected) { try SIPMessage(datagram: Fixture.bytes(name)) }
    }

    @Test func aDisplayNameWithACommaIsRefusedOnceTheMessageIsWhole() {
        var bytes = Fixture.bytes("baddn")
        bytes += Array("\r\n".utf8)
        #expect(throws: SIPParseError.malformedHeader("From")) { try SIPMessage(datagram: bytes) }
    }

    @Test func aBranchWithOnlyTheMagicCookieIdentifiesNoTransaction() throws {
        let message = try SIPMessage(datagram: Fixture.bytes("badbranch"))
        #expect(SIPTransactionKey.server(for: message) == nil)
    }
}
