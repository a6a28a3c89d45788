import Media
import Testing
@testable import WebRTC

struct WebRTCOfferTests {
    private func offer(_ text: String) throws -> WebRTCOffer {
        try WebRTCOffer(SessionDescription(parsing: text))
    }

    /// The refusal for `text`, a fixture changed to lack something.
    private func refusal(_ text: String) -> WebRTCOfferError? {
        do {
            _ = try WebRTCOffer(SessionDescription(parsing: text))
            return nil
        } catch let error as WebRTCOfferError {
            return error
        } catch {
            Issue.record("the variant does not parse: \(error)")
            return nil
        }
    }

    private func chromeWith(_ target: String, _ replacement: String) -> String {
        OfferFixtures.replacing(target, with: replacement, in: OfferFixtures.chrome)
    }

    @Test func chromesOfferIsReadWhole() throws {
        let offer = try offer(OfferFixtures.chrome)
        #expect(offer.sections == [.audio, .data])
        #expect(offer.audioMid == "0" && offer.dataMid == "1")
        #expect(offer.audioProto == "UDP/TLS/RTP/SAVPF")
        #expect(offer.opusPayloadType == 111)
        #expect(offer.opusFormatParameters == "minptime=10;useinbandfec=1")
        #expect(offer.telephoneEventPayloadType == 110)
        #expect(offer.audioDirection == .sendrecv)
        #expect(offer.remoteAudioSSRC == 3_485_940_486)
        #expect(offer.sctpPort == 5000 && offer.maxMessageSize == 262_144)
        #expect(offer.iceUfrag == "Jpbd" && offer.icePwd == "Fus4hRjMrpP46HRkXRz+RPdL")
        #expect(offer.fingerprint.algorithm == "sha-256")
        #expect(offer.fingerprint.bytes.prefix(4) == [0x2B, 0x08, 0xB7, 0xEE])
        #expect(offer.bundle == ["0", "1"])
    }

    @Test func aiortcsOfferIsReadWithItsSha256AmongThreeFingerprints() throws {
        let offer = try offer(OfferFixtures.aiortc)
        #expect(offer.sections == [.audio, .data])
        #expect(offer.opusPayloadType == 96)
        #expect(offer.opusFormatParameters == nil)
        #expect(offer.telephoneEventPayloadType == nil)
        #expect(offer.remoteAudioSSRC == 1_627_437_442)
        #expect(offer.maxMessageSize == 65_536)
        #expect(offer.iceUfrag == "lZ6W")
        #expect(offer.fingerprint.bytes.count == 32 && offer.fingerprint.bytes.first == 0xE0)
    }

    @Test func theChromeAndAiortcOffersRoundTripByteForByte() throws {
        for text in [OfferFixtures.chrome, OfferFixtures.aiortc] {
            #expect(try SessionDescription(parsing: text).text == text)
        }
    }

    @Test func telephoneEventsAt8kHzAloneAreNotTaken() throws {
        let offer = try offer(chromeWith("a=rtpmap:110 telephone-event/48000", "a=rtpmap:110 telephone-event/16000"))
        #expect(offer.telephoneEventPayloadType == nil)
    }

    @Test func theSdpSectionsOrderAndExtraSectionsAreMirrored() throws {
        let video = "m=video 9 UDP/TLS/RTP/SAVPF 96\r\nc=IN IP4 0.0.0.0\r\na=mid:2\r\na=rtpmap:96 VP8/90000\r\n"
        let text = chromeWith("m=application", video + "m=application")
        let offer = try offer(text)
        #expect(offer.sections == [.audio, .rejected(type: "video", proto: "UDP/TLS/RTP/SAVPF", format: "96", mid: "2"), .data])
    }

    @Test func aBrowserSendingOnlyIsAnsweredReceiveOnly() throws {
        let offer = try offer(chromeWith("a=sendrecv", "a=sendonly"))
        #expect(offer.audioDirection == .sendonly)
        #expect(offer.audioDirection.reversed == .recvonly)
    }

    @Test func setupActiveIsTaken() throws {
        _ = try offer(chromeWith("a=setup:actpass", "a=setup:active"))
    }

    @Test func anOfferWithoutAudioIsRefused() {
        #expect(refusal(chromeWith("m=audio 9", "m=video 9")) == .noAudio)
        #expect(refusal(chromeWith("m=audio 9", "m=audio 0")) == .noAudio)
    }

    @Test func aBundleOnlyAudioSectionWithPortZeroIsTaken() throws {
        let text = chromeWith("m=audio 9", "m=audio 0")
        let bundleOnly = OfferFixtures.replacing("a=mid:0\r\n", with: "a=mid:0\r\na=bundle-only\r\n", in: text)
        #expect(try offer(bundleOnly).sections == [.audio, .data])
    }

    @Test func audioOverPlainRTPIsRefused() {
        #expect(refusal(chromeWith("m=audio 9 UDP/TLS/RTP/SAVPF", "m=audio 9 RTP/AVP")) == .unsupportedAudioProfile("RTP/AVP"))
    }

    @Test func audioWithoutOpusIsRefused() {
        let text = chromeWith("a=rtpmap:111 opus/48000/2", "a=rtpmap:111 G7221/16000")
        #expect(refusal(text) == .audioWithoutOpus(mid: "0"))
        // An rtpmap for a payload type the m= line does not list does not count.
        let unlisted = chromeWith("UDP/TLS/RTP/SAVPF 111 63", "UDP/TLS/RTP/SAVPF 63")
        #expect(refusal(unlisted) == .audioWithoutOpus(mid: "0"))
    }

    @Test func anOfferWithoutADataChannelIsRefused() {
        #expect(refusal(chromeWith("UDP/DTLS/SCTP webrtc-datachannel", "UDP/DTLS/SCTP other")) == .noDataChannel)
        #expect(refusal(chromeWith("m=application 9", "m=application 0")) == .noDataChannel)
        #expect(refusal(chromeWith("m=application 9 UDP/DTLS/SCTP webrtc-datachannel", "m=application 9 DTLS/SCTP 5000")) == .noDataChannel)
    }

    @Test func sectionsWithoutAMidAreRefused() {
        #expect(refusal(chromeWith("a=mid:0\r\n", "")) == .missingMid(media: "audio"))
        #expect(refusal(chromeWith("a=mid:1\r\n", "")) == .missingMid(media: "application"))
    }

    @Test func missingICECredentialsAreRefused() {
        #expect(refusal(chromeWith("a=ice-pwd:Fus4hRjMrpP46HRkXRz+RPdL\r\n", "")) == .missingICECredentials(mid: "0"))
    }

    @Test func iceCredentialsOfTheWrongLengthOrCharactersAreRefused() {
        #expect(refusal(chromeWith("a=ice-ufrag:Jpbd", "a=ice-ufrag:Jpb")) == .invalidICECredentials(mid: "0"))
        #expect(refusal(chromeWith("a=ice-pwd:Fus4hRjMrpP46HRkXRz+RPdL", "a=ice-pwd:short")) == .invalidICECredentials(mid: "0"))
        #expect(refusal(chromeWith("a=ice-ufrag:Jpbd", "a=ice-ufrag:Jp;d")) == .invalidICECredentials(mid: "0"))
    }

    @Test func sessionLevelICECredentialsServeBothSections() throws {
        var text = chromeWith("a=ice-ufrag:Jpbd\r\n", "")
        text = OfferFixtures.replacing("a=ice-pwd:Fus4hRjMrpP46HRkXRz+RPdL\r\n", with: "", in: text)
        text = OfferFixtures.replacing("a=extmap-allow-mixed\r\n", with: "a=extmap-allow-mixed\r\na=ice-ufrag:Sess\r\na=ice-pwd:SessionPasswordOf22Chars\r\n", in: text)
        let offer = try offer(text)
        #expect(offer.iceUfrag == "Sess" && offer.icePwd == "SessionPasswordOf22Chars")
    }

    @Test func aMissingFingerprintIsRefused() {
        let text = chromeWith("a=fingerprint:sha-256 2B:08:B7:EE:E9:14:3B:61:93:68:C3:12:1A:6A:ED:0E:88:03:EB:A0:03:9E:EA:35:40:4E:25:3E:34:08:97:93\r\n", "")
        #expect(refusal(text) == .missingFingerprint(mid: "0"))
    }

    @Test func aFingerprintOtherThanSha256IsRefused() {
        let text = chromeWith("a=fingerprint:sha-256 2B:08:B7:EE:E9:14:3B:61", "a=fingerprint:sha-1 2B:08:B7:EE:E9:14:3B:61")
        #expect(refusal(OfferFixtures.replacing(":34:08:97:93\r\n", with: "\r\n", in: text)) == .unsupportedFingerprint(mid: "0", algorithms: ["sha-1"]))
        // A sha-256 of the wrong length is no sha-256.
        let short = chromeWith(":34:08:97:93\r\n", "\r\n")
        #expect(refusal(short) == .unsupportedFingerprint(mid: "0", algorithms: ["sha-256"]))
    }

    @Test func setupPassiveOrHoldconnIsRefused() {
        #expect(refusal(chromeWith("a=setup:actpass", "a=setup:passive")) == .unsupportedSetup(mid: "0", setup: "passive"))
        #expect(refusal(chromeWith("a=setup:actpass", "a=setup:holdconn")) == .unsupportedSetup(mid: "0", setup: "holdconn"))
    }

    @Test func anOfferWithoutBundleIsRefused() {
        #expect(refusal(chromeWith("a=group:BUNDLE 0 1\r\n", "")) == .missingBundle)
        #expect(refusal(chromeWith("a=group:BUNDLE 0 1", "a=group:BUNDLE 0")) == .notBundled(mid: "1"))
    }

    @Test func bundledSectionsWithDifferentCredentialsOrFingerprintsAreRefused() {
        let text = OfferFixtures.chrome
        let dataPart = text[text.firstRange(of: "m=application")!.lowerBound...]
        let audioPart = String(text[..<dataPart.startIndex])
        let otherCredentials = OfferFixtures.replacing("a=ice-ufrag:Jpbd", with: "a=ice-ufrag:Other", in: String(dataPart))
        #expect(refusal(audioPart + otherCredentials) == .bundledICECredentialsDiffer)
        let otherFingerprint = OfferFixtures.replacing("2B:08:B7:EE", with: "2B:08:B7:EF", in: String(dataPart))
        #expect(refusal(audioPart + otherFingerprint) == .bundledFingerprintsDiffer)
    }

    @Test func audioWithoutRTCPMuxIsRefused() {
        #expect(refusal(chromeWith("a=rtcp-mux\r\n", "")) == .rtcpMuxMissing(mid: "0"))
    }

    @Test func everyRefusalHasAMessage() {
        let errors: [WebRTCOfferError] = [
            .noAudio, .unsupportedAudioProfile("RTP/AVP"), .audioWithoutOpus(mid: "0"), .noDataChannel, .missingMid(media: "audio"),
            .missingICECredentials(mid: "0"), .invalidICECredentials(mid: "0"), .missingFingerprint(mid: "0"),
            .unsupportedFingerprint(mid: "0", algorithms: ["sha-1"]), .unsupportedSetup(mid: "0", setup: "passive"), .missingBundle,
            .notBundled(mid: "1"), .bundledICECredentialsDiffer, .bundledFingerprintsDiffer, .rtcpMuxMissing(mid: "0"),
        ]
        for error in errors { #expect(!error.description.isEmpty) }
    }
}
