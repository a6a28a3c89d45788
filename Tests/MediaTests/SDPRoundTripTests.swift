import Testing
@testable import Media

struct SDPRoundTripTests {
    @Test func aCRLFDescriptionSerialisesBackByteForByte() throws {
        let sdp = try SessionDescription(parsing: sessionLevelOffer)
        #expect(sdp.text == sessionLevelOffer)
    }

    @Test func anLFDescriptionSerialisesWithCRLFAndParsesToTheSameValue() throws {
        let sdp = try SessionDescription(parsing: sipOffer)
        let expected = sipOffer.split(separator: "\n", omittingEmptySubsequences: true).map { $0 + "\r\n" }.joined()
        #expect(sdp.text == expected)
        #expect(try SessionDescription(parsing: sdp.bytes) == sdp)
    }

    @Test func attributeValuesAreKeptVerbatim() throws {
        let text = "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\na=msid-semantic: WMS stream\r\na=empty:\r\na=flag\r\na=url:http://x:80/y\r\n"
        let sdp = try SessionDescription(parsing: text)
        #expect(sdp.attributes == [SDPAttribute("msid-semantic", " WMS stream"), SDPAttribute("empty", ""), SDPAttribute("flag"), SDPAttribute("url", "http://x:80/y")])
        #expect(sdp.text == text)
    }

    @Test func emptyLinesAndAMissingFinalLineEndingAreTolerated() throws {
        let sdp = try SessionDescription(parsing: "v=0\r\n\r\no=- 1 1 IN IP4 0.0.0.0\ns=-\nt=0 0\nm=audio 9 RTP/AVP 0\na=sendrecv")
        #expect(sdp.media[0].attributes == [SDPAttribute("sendrecv")])
    }

    @Test func runsOfSpacesInAnMLineAreWrittenSingle() throws {
        let sdp = try SessionDescription(parsing: "v=0\no=- 1 1 IN IP4 0.0.0.0\ns=-\nt=0 0\nm=audio  9 RTP/AVP  0 8\n")
        #expect(sdp.media[0].formats == ["0", "8"])
        #expect(sdp.text.hasSuffix("m=audio 9 RTP/AVP 0 8\r\n"))
        #expect(try SessionDescription(parsing: sdp.text) == sdp)
    }

    @Test func aBuiltDescriptionParsesBackToItself() throws {
        let built = SessionDescription(
            lines: [SDPLine("v", "0"), SDPLine("o", "- 7 2 IN IP4 0.0.0.0"), SDPLine("s", "-"), SDPLine("t", "0 0")],
            attributes: [SDPAttribute("ice-lite")],
            media: [MediaDescription(type: "audio", port: 4000, proto: "RTP/AVP", formats: ["0"], lines: [SDPLine("c", "IN IP4 203.0.113.1")],
                                     attributes: [SDPAttribute("rtpmap", "0 PCMU/8000"), SDPAttribute("sendrecv")])])
        #expect(try SessionDescription(parsing: built.bytes) == built)
    }
}
