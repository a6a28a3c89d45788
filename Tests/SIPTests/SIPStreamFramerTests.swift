import Testing
@testable import SIP

/// The stream framer: messages back to back framed by Content-Length, in any cut of reads,
/// keep-alive CRLFs skipped, bounds enforced as soon as they are known.
@Suite struct SIPStreamFramerTests {
    static let options = Fixture.bytes("lwsdisp")
    static let invite = try! SIPMessage(datagram: Fixture.bytes("wsinv")).encoded()

    static func drain(_ framer: inout SIPStreamFramer) throws -> [SIPMessage] {
        var messages: [SIPMessage] = []
        while let message = try framer.next() { messages.append(message) }
        return messages
    }

    @Test func messagesBackToBackComeOutWhateverTheReads() throws {
        let stream = Array("\r\n\r\n".utf8) + Self.invite + Array("\r\n".utf8) + Self.options + Self.invite
        for size in [1, 2, 3, 7, 64, stream.count] {
            var framer = SIPStreamFramer()
            var messages: [SIPMessage] = []
            var offset = 0
            while offset < stream.count {
                framer.append(stream[offset..<min(offset + size, stream.count)])
                offset += size
                messages += try Self.drain(&framer)
            }
            #expect(messages.map(\.method) == ["INVITE", "OPTIONS", "INVITE"], "reads of \(size)")
            #expect(messages.first?.body.count == 150)
            #expect(framer.bufferedCount == 0)
        }
    }

    @Test func aStreamMessageWithoutContentLengthIsRefused() {
        var framer = SIPStreamFramer()
        framer.append(sip("OPTIONS sip:a@h SIP/2.0", "Via: SIP/2.0/TCP h;branch=z9hG4bKx", "From: <sip:b@h>;tag=1",
                          "To: <sip:a@h>", "Call-ID: c", "CSeq: 1 OPTIONS", ""))
        #expect(throws: SIPParseError.contentLengthRequired) { try framer.next() }
        #expect(throws: SIPParseError.contentLengthRequired) { try framer.next() }
    }

    @Test func anOversizedBodyIsRefusedBeforeItArrives() {
        var framer = SIPStreamFramer()
        framer.append(sip("MESSAGE sip:a@h SIP/2.0", "Content-Length: \(SIPMessageParser.maxBodyBytes + 1)", ""))
        #expect(throws: SIPParseError.bodyTooLarge(limit: SIPMessageParser.maxBodyBytes)) { try framer.next() }
    }

    @Test func aHeaderSectionThatNeverEndsIsRefusedAtTheBound() throws {
        var framer = SIPStreamFramer()
        framer.append(Array("OPTIONS sip:a@h SIP/2.0\r\n".utf8))
        let line = Array("X-Padding: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n".utf8)
        var refused = false
        for _ in 0..<400 where !refused {
            framer.append(line)
            do { _ = try framer.next() } catch { refused = error == .headerSectionTooLarge(limit: SIPMessageParser.maxHeaderBytes) }
        }
        #expect(refused)
        #expect(framer.bufferedCount <= SIPMessageParser.maxHeaderBytes + 4 + line.count)
    }

    @Test func anInvalidMessageOnAStreamStopsIt() {
        var framer = SIPStreamFramer()
        framer.append(Fixture.bytes("mismatch01") + Self.options)
        #expect(throws: SIPParseError.methodMismatch) { try framer.next() }
        #expect(throws: SIPParseError.methodMismatch) { try framer.next() }
    }
}
