@testable import Media
@testable import WebRTC

/// A session description as `POST /v1/realtime/calls` takes an offer (and SIP will). Checks that
/// what parses is within the bounds, serialises to text that parses to the same value, and, when it
/// validates as a WebRTC offer, is answered with a description that our own parser reads back with
/// the offer's m-section count; that a refusal of either kind can be described.
enum SDPFuzz {
    static func run(_ input: UnsafeRawBufferPointer) {
        let description: SessionDescription
        do {
            description = try SessionDescription(parsing: Array(input))
        } catch {
            precondition(!error.description.isEmpty)
            return
        }
        precondition(description.media.count <= SessionDescription.maxMediaSections, "\(description.media.count) sections")
        let serialised = description.bytes
        // CRLF in place of LF lengthens the text; below the bound it must read back as it was.
        if serialised.count <= SessionDescription.maxBytes {
            precondition((try? SessionDescription(parsing: serialised)) == description, "the description does not read back")
        }
        do {
            let offer = try WebRTCOffer(description)
            let answer = WebRTCAnswer(
                offer: offer, iceUfrag: "Prly", icePwd: "parleyPasswordOf24Charsx", certificateFingerprint: [UInt8](repeating: 0xAB, count: 32),
                candidates: [.init(address: "192.0.2.1", port: 40_000)], audioSSRC: 1, cname: "fuzz", sessionID: 1)
            let built = answer.sessionDescription
            precondition((try? SessionDescription(parsing: answer.bytes)) == built, "the answer does not parse")
            precondition(built.media.count == description.media.count, "the answer has \(built.media.count) sections")
        } catch {
            precondition(!error.description.isEmpty)
        }
    }
}
