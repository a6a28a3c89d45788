import Testing
@testable import MockLLM

/// The mock's reading of multipart/form-data (RFC 7578), what its transcription route gets from
/// an OpenAI-style upload: the boundary from the content type, and the parts by name, their bodies
/// byte for byte.
@Suite struct MultipartTests {
    @Test func theBoundaryComesFromTheContentTypeQuotedOrNot() {
        #expect(Multipart.boundary("multipart/form-data; boundary=abc123") == "abc123")
        #expect(Multipart.boundary(#"Multipart/Form-Data; charset=utf-8; BOUNDARY="x y""#) == "x y")
        #expect(Multipart.boundary("application/json") == nil)
        #expect(Multipart.boundary("multipart/form-data") == nil)
    }

    @Test func partsAreReadByNameWithTheirBytesIntact() {
        let body = Array("""
            --b\r
            Content-Disposition: form-data; name="model"\r
            \r
            whisper-1\r
            --b\r
            Content-Disposition: form-data; name="file"; filename="a.wav"\r
            Content-Type: audio/wav\r
            \r

            """.utf8) + [0, 13, 10, 255] + Array("\r\n--b--\r\n".utf8)
        let parts = Multipart.parts(body, boundary: "b")
        #expect(parts.map(\.name) == ["model", "file"])
        #expect(parts.first?.body == Array("whisper-1".utf8))
        #expect(parts.last?.body == [0, 13, 10, 255])
    }

    @Test func aBodyWithoutDelimitersOrHeadsHasNoParts() {
        #expect(Multipart.parts(Array("no parts here".utf8), boundary: "b").isEmpty)
        #expect(Multipart.parts(Array("--b\r\nno head end--b--".utf8), boundary: "b").isEmpty)
    }
}
