import Testing
@testable import Media

struct SDPRefusalTests {
    private static let head = "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\n"

    private func error(_ text: String) -> SDPError? {
        do {
            _ = try SessionDescription(parsing: text)
            return nil
        } catch {
            return error
        }
    }

    @Test func theFirstLineMustBeVersionZero() {
        #expect(error("o=- 1 1 IN IP4 0.0.0.0\r\nv=0\r\n") == .missingVersion(line: 1))
        #expect(error("v=1\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\n") == .missingVersion(line: 1))
        #expect(error("\r\n\r\n") == .missingVersion(line: 2))
        #expect(error("") == .missingVersion(line: 1))
    }

    @Test func originNameAndTimingAreRequiredBeforeTheFirstMediaSection() {
        #expect(error("v=0\r\ns=-\r\nt=0 0\r\n") == .missingField("o"))
        #expect(error("v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\nt=0 0\r\nm=audio 9 RTP/AVP 0\r\n") == .missingField("s"))
        #expect(error("v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\n") == .missingField("t"))
    }

    @Test func aLineThatIsNotLetterEqualsValueIsRefusedByNumber() {
        #expect(error(Self.head + "a=x\r\nfoo\r\n") == .malformedLine(line: 6))
        #expect(error(Self.head + "A=x\r\n") == .malformedLine(line: 5))
        #expect(error(Self.head + "a\r\n") == .malformedLine(line: 5))
        #expect(error(Self.head + "a=x\ry\r\n") == .malformedLine(line: 5))
        #expect(error(Self.head + "a=x\0y\r\n") == .malformedLine(line: 5))
    }

    @Test func invalidUTF8IsRefused() {
        var bytes = Array((Self.head + "s=").utf8)
        bytes += [0xC3, 0x28, 0x0D, 0x0A]
        #expect(throws: SDPError.invalidUTF8(line: 5)) { try SessionDescription(parsing: bytes) }
    }

    @Test func anAttributeWithoutANameIsRefused() {
        #expect(error(Self.head + "a=\r\n") == .malformedAttribute(line: 5))
        #expect(error(Self.head + "a=:x\r\n") == .malformedAttribute(line: 5))
    }

    @Test func malformedMediaLinesAreRefused() {
        for line in ["m=audio 9 RTP/AVP", "m=audio x RTP/AVP 0", "m=audio 65536 RTP/AVP 0", "m=audio 9/ RTP/AVP 0", "m=audio -1 RTP/AVP 0"] {
            #expect(error(Self.head + line + "\r\n") == .malformedMediaLine(line: 5))
        }
    }

    @Test func theInputIsBoundedTo64KiB() {
        let text = Self.head + String(repeating: "a=x\r\n", count: 13_200)
        #expect(error(text) == .tooLarge(bytes: text.utf8.count, limit: 65_536))
    }

    @Test func aLineIsBoundedTo4KiB() {
        #expect(error(Self.head + "a=" + String(repeating: "x", count: 4_094) + "\r\n") == nil)
        #expect(error(Self.head + "a=" + String(repeating: "x", count: 4_095) + "\r\n") == .lineTooLong(line: 5, limit: 4_096))
    }

    @Test func atMost64MediaSections() {
        let section = "m=audio 9 RTP/AVP 0\r\n"
        #expect(error(Self.head + String(repeating: section, count: 64)) == nil)
        #expect(error(Self.head + String(repeating: section, count: 65)) == .tooManyMediaSections(limit: 64))
    }

    @Test func everyRefusalDescribesItself() {
        let errors: [SDPError] = [.tooLarge(bytes: 1, limit: 1), .lineTooLong(line: 1, limit: 1), .tooManyMediaSections(limit: 1), .malformedLine(line: 3),
                                  .invalidUTF8(line: 1), .missingVersion(line: 1), .missingField("o"), .malformedMediaLine(line: 9), .malformedAttribute(line: 2)]
        for error in errors { #expect(!error.description.isEmpty) }
        #expect(SDPError.malformedMediaLine(line: 9).description.contains("line 9"))
    }
}
