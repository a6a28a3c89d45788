import Testing
@testable import SIP

/// The writer: what parses writes back as canonical text that parses to the same message.
@Suite struct SIPRoundTripTests {
    @Test(arguments: Fixture.valid + Fixture.semantic)
    func whatParsesWritesBackAndParsesTheSame(name: String) throws {
        let message = try SIPMessage(datagram: Fixture.bytes(name))
        let written = message.encoded()
        #expect(try SIPMessage(datagram: written) == message)
        #expect(written == (try SIPMessage(datagram: written)).encoded())
    }

    @Test func compactFormsAreWrittenLongAndListsOnePerLine() throws {
        let message = try SIPMessage(datagram: sip(
            "OPTIONS sip:a@example.com SIP/2.0",
            "v: SIP/2.0/UDP h.example.com;branch=z9hG4bK1, SIP/2.0/TCP g.example.com;branch=z9hG4bK2",
            "f: <sip:b@example.com>;tag=1", "t: sip:a@example.com", "i: abc", "CSeq: 1 OPTIONS",
            "k: timer,  100rel", "l: 0", ""))
        let text = String(decoding: message.encoded(), as: UTF8.self)
        #expect(text == "OPTIONS sip:a@example.com SIP/2.0\r\nVia: SIP/2.0/UDP h.example.com;branch=z9hG4bK1\r\n"
            + "Via: SIP/2.0/TCP g.example.com;branch=z9hG4bK2\r\nFrom: <sip:b@example.com>;tag=1\r\nTo: sip:a@example.com\r\n"
            + "Call-ID: abc\r\nCSeq: 1 OPTIONS\r\nSupported: timer\r\nSupported: 100rel\r\nContent-Length: 0\r\n\r\n")
        #expect(message.supported() == ["timer", "100rel"])
    }

    /// A space and a combining mark are one Character: trimming by Character kept the space the
    /// writer puts after the colon (the sip fuzz target's finding, corpus combining-mark-after-colon).
    @Test func aValueStartingWithACombiningMarkReadsBackTheSame() throws {
        let message = try SIPMessage(datagram: sip(
            "OPTIONS sip:a@example.com SIP/2.0", "Via: SIP/2.0/UDP h;branch=z9hG4bKx", "From: <sip:b@h>;tag=1",
            "To: <sip:a@example.com>", "Call-ID: c", "CSeq: 1 OPTIONS", "X-Mark:\u{360}Uct \u{301}", ""))
        #expect(message.headers.first { $0.name == "X-Mark" }?.value == "\u{360}Uct \u{301}")
        #expect(try SIPMessage(datagram: message.encoded()) == message)
    }

    @Test func aDatagramWithoutContentLengthTakesTheRestAsBody() throws {
        var bytes = sip("MESSAGE sip:a@example.com SIP/2.0", "Via: SIP/2.0/UDP h;branch=z9hG4bKx", "From: <sip:b@h>;tag=1",
                        "To: <sip:a@example.com>", "Call-ID: c", "CSeq: 2 MESSAGE", "")
        bytes += Array("hello".utf8)
        let message = try SIPMessage(datagram: bytes)
        #expect(message.body == Array("hello".utf8))
        #expect(String(decoding: message.encoded(), as: UTF8.self).contains("Content-Length: 5\r\n\r\nhello"))
    }

    @Test func leadingCRLFsAreSkippedAndCRLFsAloneAreEmpty() throws {
        #expect(throws: SIPParseError.empty) { try SIPMessage(datagram: Array("\r\n\r\n".utf8)) }
        let message = try SIPMessage(datagram: Array("\r\n".utf8) + Fixture.bytes("lwsdisp"))
        #expect(message.method == "OPTIONS")
    }

    @Test func malformedLinesAreRefused() {
        let head = "Via: SIP/2.0/UDP h;branch=z9hG4bKx\r\nFrom: <sip:b@h>;tag=1\r\nTo: <sip:a@h>\r\nCall-ID: c\r\nCSeq: 1 OPTIONS\r\n"
        let cases: [(String, SIPParseError)] = [
            ("OPTIONS sip:a@h SIP/2.0\r\n\(head)Bare\nLF: x\r\n\r\n", .malformedHeaderLine),
            ("OPTIONS sip:a@h SIP/2.0\r\n folded: first\r\n\(head)\r\n", .malformedHeaderLine),
            ("OPTIONS sip:a@h SIP/2.0\r\n\(head)No colon here\r\n\r\n", .malformedHeaderLine),
            ("OPTIONS sip:a@h SIP/2.0\r\nFrom: <sip:b@h>;tag=1\r\nTo: <sip:a@h>\r\nCall-ID: c\r\nCSeq: 1 OPTIONS\r\n\r\n", .missingHeader("Via")),
            ("OPTIONS sip:a@h SIP/2.0\r\n\(head)Max-Forwards: 256\r\n\r\n", .malformedHeader("Max-Forwards")),
            ("OPTIONS sip:a@h SIP/2.0\r\n\(head)Content-Length: 1\r\nl: 2\r\n\r\nab", .malformedHeader("Content-Length")),
            ("SIP/2.0 99 Too Small\r\n\(head)\r\n", .malformedStatusLine),
            ("SIP/3.0 200 OK\r\n\(head)\r\n", .unsupportedVersion),
            ("OPTIONS sip:a@h SIP/2.0\r\n\(head)", .incompleteHeaderSection),
        ]
        for (text, expected) in cases {
            #expect(throws: expected, "\(text)") { try SIPMessage(datagram: Array(text.utf8)) }
        }
        var invalid = Array("OPTIONS sip:a@h SIP/2.0\r\n\(head)X: ".utf8)
        invalid += [0xC3, 0x28] + Array("\r\n\r\n".utf8)
        #expect(throws: SIPParseError.invalidUTF8) { try SIPMessage(datagram: invalid) }
    }

    @Test func anOversizedHeaderSectionIsRefused() {
        let padding = String(repeating: "a", count: SIPMessageParser.maxHeaderBytes)
        let bytes = sip("OPTIONS sip:a@h SIP/2.0", "X: \(padding)", "")
        #expect(throws: SIPParseError.headerSectionTooLarge(limit: SIPMessageParser.maxHeaderBytes)) { try SIPMessage(datagram: bytes) }
    }

    @Test func uriPartsReadAndWriteBack() throws {
        let uri = try #require(SIPURI("sips:alice:secret@[2001:db8::1]:5061;transport=tcp;lr?Subject=hi&Priority=urgent"))
        #expect(uri.scheme == .sips && uri.user == "alice" && uri.password == "secret")
        #expect(uri.host == "[2001:db8::1]" && uri.port == 5061)
        #expect(uri.parameters == [SIPParameter("transport", "tcp"), SIPParameter("lr")])
        #expect(uri.headers == [SIPParameter("Subject", "hi"), SIPParameter("Priority", "urgent")])
        #expect(uri.description == "sips:alice:secret@[2001:db8::1]:5061;transport=tcp;lr?Subject=hi&Priority=urgent")
        let tel = try #require(SIPURI("tel:+1-201-555-0123;phone-context=example.com"))
        #expect(tel.scheme == .tel && tel.user == "+1-201-555-0123" && tel.parameters.value("phone-context") == "example.com")
        #expect(SIPURI("SIP:bob@example.com")?.description == "sip:bob@example.com")
        #expect(SIPURI("urn:service:sos")?.scheme == .other("urn"))
        for bad in ["", "sip:", "sip:a@", "sip:a@h:99999", "sip:a@h;;x", "<sip:a@h>", "sip:a b@h", "1sip:a@h", "sip:@h"] {
            #expect(SIPURI(bad) == nil, "\(bad)")
        }
    }
}
