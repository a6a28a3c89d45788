import Media
import Testing
@testable import WebRTC

struct WebRTCAnswerTests {
    static let ourFingerprint: [UInt8] = [
        0x3C, 0xDA, 0x7F, 0x86, 0x12, 0x39, 0x72, 0x2A, 0xDE, 0x99, 0x07, 0x61, 0x20, 0x96, 0x25, 0x34,
        0xB5, 0xAD, 0xBB, 0x81, 0x0A, 0x5A, 0x2B, 0x5C, 0x59, 0xF5, 0xA7, 0xD9, 0xBE, 0x41, 0xCA, 0x66,
    ]
    static let ourFingerprintText = "sha-256 3C:DA:7F:86:12:39:72:2A:DE:99:07:61:20:96:25:34:B5:AD:BB:81:0A:5A:2B:5C:59:F5:A7:D9:BE:41:CA:66"

    private func answer(_ text: String, candidates: [WebRTCAnswer.HostCandidate] = [.init(address: "203.0.113.5", port: 40_000), .init(address: "203.0.113.5", port: 40_001)]) throws -> WebRTCAnswer {
        let offer = try WebRTCOffer(SessionDescription(parsing: text))
        return WebRTCAnswer(offer: offer, iceUfrag: "Prly", icePwd: "parleyPasswordOf24Charsx",
                            certificateFingerprint: Self.ourFingerprint, candidates: candidates, audioSSRC: 0x1234_5678,
                            cname: "parley-call-1", sessionID: 0xFFFF_0000_0000_0001)
    }

    @Test func chromesOfferIsAnsweredLineByLine() throws {
        let answer = try answer(OfferFixtures.chrome)
        let expected = """
            v=0
            o=- 9223090561878065153 2 IN IP4 0.0.0.0
            s=-
            t=0 0
            a=ice-lite
            a=group:BUNDLE 0 1
            m=audio 40000 UDP/TLS/RTP/SAVPF 111 110
            c=IN IP4 203.0.113.5
            a=mid:0
            a=ice-ufrag:Prly
            a=ice-pwd:parleyPasswordOf24Charsx
            a=fingerprint:\(Self.ourFingerprintText)
            a=setup:passive
            a=sendrecv
            a=rtcp-mux
            a=msid:parley parley-audio
            a=rtpmap:111 opus/48000/2
            a=fmtp:111 minptime=10;useinbandfec=1
            a=rtpmap:110 telephone-event/48000
            a=fmtp:110 0-15
            a=ssrc:305419896 cname:parley-call-1
            a=candidate:1 1 udp 2130706431 203.0.113.5 40000 typ host
            a=candidate:2 1 udp 2130706175 203.0.113.5 40001 typ host
            a=end-of-candidates
            m=application 40000 UDP/DTLS/SCTP webrtc-datachannel
            c=IN IP4 203.0.113.5
            a=mid:1
            a=ice-ufrag:Prly
            a=ice-pwd:parleyPasswordOf24Charsx
            a=fingerprint:\(Self.ourFingerprintText)
            a=setup:passive
            a=sctp-port:5000
            a=max-message-size:262144
            a=candidate:1 1 udp 2130706431 203.0.113.5 40000 typ host
            a=candidate:2 1 udp 2130706175 203.0.113.5 40001 typ host
            a=end-of-candidates
            """
        let lines = answer.sessionDescription.text.split(separator: "\r\n", omittingEmptySubsequences: false)
        let expectedLines = expected.split(separator: "\n").map(String.init) + [""]
        #expect(lines.count == expectedLines.count)
        for (line, wanted) in zip(lines, expectedLines) { #expect(String(line) == wanted) }
    }

    @Test func theAnswerParsesWithOurParserAndReadsAsItWasBuilt() throws {
        let answer = try answer(OfferFixtures.chrome)
        let parsed = try SessionDescription(parsing: answer.bytes)
        #expect(parsed == answer.sessionDescription)
        #expect(parsed.isICELite)
        #expect(parsed.bundle == ["0", "1"])
        let audio = parsed.media[0]
        #expect(audio.mid == "0" && parsed.media[1].mid == "1")
        #expect(parsed.setup(of: audio) == .passive)
        #expect(parsed.fingerprints(of: audio) == [SDPFingerprint(algorithm: "sha-256", bytes: Self.ourFingerprint)])
        #expect(parsed.iceUfrag(of: parsed.media[1]) == "Prly")
        #expect(audio.rtpMap(payloadType: 111) == SDPRTPMap(payloadType: 111, encoding: "opus", clockRate: 48_000, channels: 2))
        #expect(audio.ssrcs == [0x1234_5678])
        #expect(audio.rtcpMux && audio.direction == .sendrecv)
        #expect(parsed.media[1].sctpPort == 5000 && parsed.media[1].maxMessageSize == 262_144)
        #expect(audio.candidates.count == 2)
    }

    @Test func aiortcsOfferIsAnsweredWithItsOpusPayloadTypeAndNoEvents() throws {
        let parsed = try SessionDescription(parsing: answer(OfferFixtures.aiortc).bytes)
        let audio = parsed.media[0]
        #expect(audio.formats == ["96"])
        #expect(audio.formatParameters(payloadType: 96) == "minptime=10;useinbandfec=1")
        #expect(audio.rtpMaps.count == 1)
        #expect(parsed.media.map(\.type) == ["audio", "application"])
    }

    @Test func extraSectionsAreRejectedWithPortZeroAndLeftOutOfTheBundle() throws {
        let video = "m=video 9 UDP/TLS/RTP/SAVPF 96 97\r\nc=IN IP4 0.0.0.0\r\na=mid:2\r\na=rtpmap:96 VP8/90000\r\n"
        let text = OfferFixtures.replacing("m=application", with: video + "m=application", in: OfferFixtures.chrome)
        let withVideo = OfferFixtures.replacing("a=group:BUNDLE 0 1", with: "a=group:BUNDLE 0 2 1", in: text)
        let parsed = try SessionDescription(parsing: answer(withVideo).bytes)
        #expect(parsed.media.map(\.type) == ["audio", "video", "application"])
        #expect(parsed.media.map(\.mid) == ["0", "2", "1"])
        #expect(parsed.media[1].port == 0 && parsed.media[1].formats == ["96"] && parsed.media[1].proto == "UDP/TLS/RTP/SAVPF")
        #expect(parsed.bundle == ["0", "1"])
    }

    @Test func aSendOnlyOfferIsAnsweredRecvOnlyWithoutOurSource() throws {
        let text = OfferFixtures.replacing("a=sendrecv", with: "a=sendonly", in: OfferFixtures.chrome)
        let audio = try SessionDescription(parsing: answer(text).bytes).media[0]
        #expect(audio.direction == .recvonly)
        #expect(audio.ssrcs.isEmpty && audio.attribute("msid") == nil)
    }

    @Test func withoutCandidatesTheSectionsUseJSEPsPlaceholder() throws {
        let parsed = try SessionDescription(parsing: answer(OfferFixtures.chrome, candidates: []).bytes)
        #expect(parsed.media[0].port == 9)
        #expect(parsed.media[0].connection == SDPConnection(addressType: "IP4", address: "0.0.0.0"))
        #expect(parsed.media[0].candidates.isEmpty && parsed.media[0].attribute("end-of-candidates") != nil)
    }

    @Test func anIPv6CandidateGivesAnIP6ConnectionLine() throws {
        let parsed = try SessionDescription(parsing: answer(OfferFixtures.chrome, candidates: [.init(address: "2001:db8::5", port: 40_000)]).bytes)
        #expect(parsed.media[0].connection == SDPConnection(addressType: "IP6", address: "2001:db8::5"))
    }
}
