import Testing
@testable import Server
import TestSupport

struct MultipartFormDataTests {
    private static let sdp = "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n"
    private static let session = #"{"type":"realtime","model":"gpt-realtime"}"#

    /// The body curl -F 'sdp=<offer.sdp' -F 'session=<session.json' sends (RFC 7578 section 4).
    private static func body(boundary: String = "------------------------d74496d66958873e", lineEnding: String = "\r\n") -> [UInt8] {
        let e = lineEnding
        let text = "--\(boundary)\(e)Content-Disposition: form-data; name=\"sdp\"\(e)Content-Type: application/sdp\(e)\(e)"
            + sdp.split(separator: "\r\n").map { $0 + e }.joined()
            + "\(e)--\(boundary)\(e)Content-Disposition: form-data; name=\"session\"\(e)\(e)\(session)\(e)--\(boundary)--\(e)"
        return Array(text.utf8)
    }

    private func error(_ body: [UInt8], boundary: String = "b") -> MultipartError? {
        do {
            _ = try MultipartFormData(body: body, boundary: boundary)
            return nil
        } catch {
            return error
        }
    }

    @Test func theSdpAndSessionPartsAreReadWithCRLF() throws {
        let form = try MultipartFormData(body: Self.body(), contentType: "multipart/form-data; boundary=------------------------d74496d66958873e")
        #expect(form.parts.map(\.name) == ["sdp", "session"])
        let sdp = try #require(form.part(named: "sdp"))
        #expect(sdp.body == Array(Self.sdp.utf8))
        #expect(sdp.contentType == "application/sdp")
        #expect(form.part(named: "session")?.body == Array(Self.session.utf8))
        #expect(form.part(named: "session")?.contentType == nil)
    }

    @Test func bareLFLineEndingsAreReadToo() throws {
        let form = try MultipartFormData(body: Self.body(lineEnding: "\n"), boundary: "------------------------d74496d66958873e")
        #expect(form.part(named: "sdp")?.body == Array(Self.sdp.replacingCRLF().utf8))
        #expect(form.part(named: "session")?.body == Array(Self.session.utf8))
    }

    @Test func aQuotedBoundaryIsUnquoted() throws {
        #expect(try MultipartFormData.boundary(contentType: #"multipart/form-data; boundary="a b:c""#) == "a b:c")
        #expect(try MultipartFormData.boundary(contentType: "Multipart/Form-Data;charset=utf-8;BOUNDARY=xyz") == "xyz")
        let form = try MultipartFormData(body: Self.body(boundary: "a b:c"), contentType: #"multipart/form-data; boundary="a b:c""#)
        #expect(form.parts.count == 2)
    }

    @Test func thePreambleAndEpilogueAreIgnored() throws {
        let body = Array("This is the preamble.\r\n".utf8) + Self.body(boundary: "b") + Array("This is the epilogue.\r\n--b\r\n".utf8)
        let form = try MultipartFormData(body: body, boundary: "b")
        #expect(form.parts.map(\.name) == ["sdp", "session"])
    }

    @Test func aLineThatOnlyStartsWithTheBoundaryIsContent() throws {
        let body = Array("--b\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\n--bc\r\n--b--".utf8)
        let form = try MultipartFormData(body: body, boundary: "b")
        #expect(form.parts == [MultipartFormData.Part(name: "x", body: Array("--bc".utf8))])
    }

    @Test func transportPaddingAfterADelimiterIsSkipped() throws {
        let body = Array("--b \t\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\ny\r\n--b--".utf8)
        #expect(try MultipartFormData(body: body, boundary: "b").part(named: "x")?.body == [0x79])
    }

    @Test func emptyPartsAndFilenamesAreRead() throws {
        let body = Array("--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"o\\\"ffer.sdp\"\r\n\r\n\r\n--b--\r\n".utf8)
        let form = try MultipartFormData(body: body, boundary: "b")
        #expect(form.parts == [MultipartFormData.Part(name: "file", filename: "o\"ffer.sdp", body: [])])
    }

    @Test func aMissingClosingBoundaryIsRefused() {
        var body = Self.body(boundary: "b")
        body.removeLast("--b--\r\n".utf8.count)
        #expect(error(body) == .missingClosingBoundary)
        #expect(error(Array("--b\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\nhello".utf8)) == .missingClosingBoundary)
    }

    @Test func aBodyWithoutTheBoundaryIsRefused() {
        #expect(error(Array("hello".utf8)) == .missingOpeningBoundary)
        #expect(error(Array("--b--\r\n".utf8)) == .noParts)
    }

    @Test func atMost16Parts() throws {
        func parts(_ count: Int) -> [UInt8] {
            Array((String(repeating: "--b\r\nContent-Disposition: form-data; name=\"p\"\r\n\r\nx\r\n", count: count) + "--b--").utf8)
        }
        #expect(try MultipartFormData(body: parts(16), boundary: "b").parts.count == 16)
        #expect(error(parts(17)) == .tooManyParts(limit: 16))
    }

    @Test func partHeadersMustNameAFormDataField() {
        #expect(error(Array("--b\r\nContent-Type: text/plain\r\n\r\nx\r\n--b--".utf8)) == .missingContentDisposition(part: 1))
        #expect(error(Array("--b\r\nContent-Disposition: attachment; name=\"x\"\r\n\r\nx\r\n--b--".utf8)) == .notFormData(part: 1))
        #expect(error(Array("--b\r\nContent-Disposition: form-data\r\n\r\nx\r\n--b--".utf8)) == .missingName(part: 1))
        #expect(error(Array("--b\r\nContent-Disposition: form-data; name=\"x\r\n\r\nx\r\n--b--".utf8)) == .malformedPartHeaders(part: 1))
        #expect(error(Array("--b\r\nno colon here\r\n\r\nx\r\n--b--".utf8)) == .malformedPartHeaders(part: 1))
        // Headers that never end in an empty line.
        #expect(error(Array("--b\r\nContent-Disposition: form-data; name=\"x\"\r\n--b--".utf8)) == .malformedPartHeaders(part: 1))
    }

    @Test func aFoldedHeaderContinuesTheLastOne() throws {
        let body = Array("--b\r\nContent-Disposition: form-data;\r\n name=\"x\"\r\n\r\ny\r\n--b--".utf8)
        #expect(try MultipartFormData(body: body, boundary: "b").part(named: "x")?.body == [0x79])
    }

    @Test func partHeadersAreBounded() {
        let long = "--b\r\nContent-Disposition: form-data; name=\"x\"\r\nX-Pad: " + String(repeating: "p", count: 8_200) + "\r\n\r\nx\r\n--b--"
        #expect(error(Array(long.utf8)) == .headersTooLarge(part: 1))
    }

    @Test func theContentTypeMustBeMultipartFormDataWithAValidBoundary() {
        func refusal(_ contentType: String) -> MultipartError? {
            do {
                _ = try MultipartFormData.boundary(contentType: contentType)
                return nil
            } catch {
                return error
            }
        }
        #expect(refusal("application/sdp") == .notMultipartFormData("application/sdp"))
        #expect(refusal("multipart/form-data") == .missingBoundary)
        #expect(refusal("multipart/form-data; boundary=") == .invalidBoundary)
        #expect(refusal("multipart/form-data; boundary=" + String(repeating: "x", count: 71)) == .invalidBoundary)
        #expect(refusal(#"multipart/form-data; boundary="trailing ""#) == .invalidBoundary)
        #expect(refusal(#"multipart/form-data; boundary="unterminated"#) == .malformedContentType)
        #expect(refusal("; boundary=x") == .malformedContentType)
    }

    @Test func everyRefusalHasAMessage() {
        let errors: [MultipartError] = [.malformedContentType, .notMultipartFormData("x"), .missingBoundary, .invalidBoundary, .missingOpeningBoundary,
                                        .missingClosingBoundary, .noParts, .tooManyParts(limit: 16), .malformedPartHeaders(part: 1), .headersTooLarge(part: 1),
                                        .missingContentDisposition(part: 1), .notFormData(part: 1), .missingName(part: 1)]
        for error in errors { #expect(!error.description.isEmpty) }
    }
}

private extension String {
    func replacingCRLF() -> String {
        split(separator: "\r\n", omittingEmptySubsequences: false).joined(separator: "\n")
    }
}

/// The `multipart` fuzz target's invariants (Fuzz/Sources/MultipartFuzz.swift) on mutated bodies.
struct MultipartMutationTests {
    @Test(arguments: Array(UInt64(1)...200))
    func mutatedBodiesKeepTheParsersInvariants(seed: UInt64) {
        var random = SeededRandom(seed: seed)
        let valid = Array(("--b\r\nContent-Disposition: form-data; name=\"sdp\"\r\nContent-Type: application/sdp\r\n\r\nv=0\r\n"
            + "\r\n--b\r\nContent-Disposition: form-data; name=\"session\"\r\n\r\n{}\r\n--b--\r\n").utf8)
        let body = random.mutate(valid, flips: 1 + Int(seed % 6))
        do {
            let form = try MultipartFormData(body: body, contentType: "multipart/form-data; boundary=b")
            #expect((1...MultipartFormData.maxParts).contains(form.parts.count))
            #expect(form.parts.reduce(0) { $0 + $1.body.count } <= body.count)
        } catch {
            #expect(!error.description.isEmpty)
        }
    }
}
