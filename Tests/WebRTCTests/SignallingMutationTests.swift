import Media
import Testing
import TestSupport
@testable import WebRTC

/// The `sdp` fuzz target's invariants (Fuzz/Sources/SDPFuzz.swift) on mutated real offers, so that
/// `make test` exercises them too: whatever parses reads back from its serialisation, an offer that
/// validates is answered with a description our parser reads, and nothing traps.
struct SignallingMutationTests {
    static let seeds: [UInt64] = Array(1...200)

    @Test(arguments: seeds)
    func mutatedOffersKeepTheParsersInvariants(seed: UInt64) {
        var random = SeededRandom(seed: seed)
        let fixture = Array((seed % 2 == 0 ? OfferFixtures.chrome : OfferFixtures.aiortc).utf8)
        // Bytes overwritten with SDP's own punctuation break and join lines and fields; cutting and
        // splicing moves sections and attributes.
        let alphabet = Array(" :=/\r\n0am-".utf8)
        var input = fixture
        for _ in 0..<(1 + Int(seed % 4)) {
            input[Int.random(in: 0..<input.count, using: &random)] = alphabet[Int.random(in: 0..<alphabet.count, using: &random)]
        }
        if seed % 3 == 0 {
            let cut = Int.random(in: 0..<input.count, using: &random)
            let splice = Int.random(in: 0..<input.count, using: &random)
            input = Array(input[..<cut]) + Array(input[splice...])
        }
        guard let description = try? SessionDescription(parsing: input) else { return }
        #expect((try? SessionDescription(parsing: description.bytes)) == description)
        guard let offer = try? WebRTCOffer(description) else { return }
        let answer = WebRTCAnswer(offer: offer, iceUfrag: "Prly", icePwd: "parleyPasswordOf24Charsx", certificateFingerprint: [UInt8](repeating: 0xAB, count: 32),
                                  candidates: [.init(address: "192.0.2.1", port: 40_000)], audioSSRC: 1, cname: "fuzz", sessionID: 1)
        let parsed = try? SessionDescription(parsing: answer.bytes)
        #expect(parsed == answer.sessionDescription)
        #expect(parsed?.media.count == description.media.count)
    }

    @Test func theUnmutatedOffersAreAnswered() throws {
        for text in [OfferFixtures.chrome, OfferFixtures.aiortc] {
            let offer = try WebRTCOffer(SessionDescription(parsing: text))
            #expect(offer.sections == [.audio, .data])
        }
    }
}
