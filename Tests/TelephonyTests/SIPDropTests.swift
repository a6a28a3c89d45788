import SIP
@testable import Telephony
import Testing

/// What /metrics says of a SIP datagram that did not parse: `too_large` past the parser's bound,
/// `malformed` otherwise.
@Suite struct SIPDropTests {
    static func reason(_ text: String) -> SIPDrop? {
        do throws(SIPParseError) {
            _ = try SIPMessageParser.parse(datagram: Array(text.utf8))
            return nil
        } catch {
            return SIPDrop(error)
        }
    }

    static let options = "OPTIONS sip:parley@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:5070;branch=z9hG4bK1\r\n"
        + "From: <sip:a@127.0.0.1>;tag=1\r\nTo: <sip:parley@127.0.0.1>\r\nCall-ID: c1\r\nCSeq: 1 OPTIONS\r\n"

    @Test func aHeaderSectionPastItsBoundIsTooLarge() {
        let padding = "X-Padding: " + String(repeating: "a", count: SIPMessageParser.maxHeaderBytes) + "\r\n"
        #expect(Self.reason(Self.options + padding + "Content-Length: 0\r\n\r\n") == .tooLarge)
        #expect(Self.reason(Self.options + padding) == .tooLarge)
    }

    @Test func anyOtherFailureIsMalformed() {
        #expect(Self.reason(Self.options + "Content-Length: 0\r\n\r\n") == nil)
        #expect(Self.reason("GARBAGE\r\n\r\n") == .malformed)
        #expect(Self.reason(Self.options) == .malformed)
        #expect(Self.reason(Self.options + "Content-Length: 9\r\n\r\nshort") == .malformed)
    }
}
