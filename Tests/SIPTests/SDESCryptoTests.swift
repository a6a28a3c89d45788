import JSON
import Media
import Testing
@testable import SIP
@testable import TLS

/// SDES (RFC 4568): `a=crypto` lines read and written, an RTP/SAVP offer answered with a key of
/// Parley's under the offer's tag, and the keys making SRTP that the other side can read.
@Suite struct SDESCryptoTests {
    static let key = Array(0..<30).map { UInt8($0 * 7 & 0xFF) }
    static var inline: String { Base64.encode(key) }

    @Test func theOneSuiteParleySpeaksIsReadWithOrWithoutALifetime() throws {
        let line = try #require(SDESCrypto(attribute: "1 AES_CM_128_HMAC_SHA1_80 inline:\(Self.inline)|2^31"))
        #expect(line.tag == 1 && line.keyAndSalt == Self.key)
        #expect(SDESCrypto(attribute: "7 AES_CM_128_HMAC_SHA1_80 inline:\(Self.inline)")?.tag == 7)
        #expect(SDESCrypto(attribute: line.attribute) == line, "what Parley writes, it reads")
        let refused = [
            "1 AES_CM_128_HMAC_SHA1_32 inline:\(Self.inline)",  // another suite
            "1 AES_CM_128_HMAC_SHA1_80 inline:\(Self.inline)|2^31|1:4",  // an MKI
            "1 AES_CM_128_HMAC_SHA1_80 inline:\(Self.inline) UNENCRYPTED_SRTP",  // a session parameter
            "1 AES_CM_128_HMAC_SHA1_80 inline:\(Self.inline);inline:\(Self.inline)",  // two keys
            "1 AES_CM_128_HMAC_SHA1_80 inline:\(Base64.encode(Self.key.prefix(16)))",  // a key without its salt
            "1 AES_CM_128_HMAC_SHA1_80 inline:not*base64", "x AES_CM_128_HMAC_SHA1_80 inline:\(Self.inline)", "1 AES_CM_128_HMAC_SHA1_80",
        ]
        for text in refused { #expect(SDESCrypto(attribute: text) == nil, "\(text)") }
    }

    @Test func anRTPSAVPOfferIsAnsweredWithAKeyOfParleysUnderItsTag() throws {
        let sdp = try PhoneAudioOfferTests.offer("""
            m=audio 5002 RTP/SAVP 0 101\na=rtpmap:101 telephone-event/8000\na=crypto:3 AES_CM_128_HMAC_SHA1_32 inline:\(Self.inline)
            a=crypto:4 AES_CM_128_HMAC_SHA1_80 inline:\(Self.inline)|2^31\n
            """)
        let offer = try PhoneAudioOffer(sdp)
        #expect(offer.crypto?.tag == 4 && offer.crypto?.keyAndSalt == Self.key, "the first line of the suite Parley speaks")
        let ours = SDESCrypto.fresh()
        let text = offer.answer(to: sdp, address: "127.0.0.1", port: 6000, sessionID: 1, version: 1, crypto: ours).text
        #expect(text.contains("m=audio 6000 RTP/SAVP 0 101\r\n") && text.contains("a=crypto:4 AES_CM_128_HMAC_SHA1_80 inline:\(Base64.encode(ours.keyAndSalt))\r\n"), "\(text)")
        #expect(try PhoneAudioOffer(try SessionDescription(parsing: text)).crypto?.keyAndSalt == ours.keyAndSalt)
        // Parley's own offer, with its key.
        let own = PhoneAudioOffer.offer(address: "127.0.0.1", port: 6000, sessionID: 1, version: 1, crypto: ours).text
        #expect(own.contains("m=audio 6000 RTP/SAVP 0 8 101\r\n") && own.contains("a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:"))
        // A SAVP section with no line Parley can use is not answerable.
        #expect(throws: PhoneAudioOffer.Refusal.secure("RTP/SAVP")) {
            try PhoneAudioOffer(try PhoneAudioOfferTests.offer("m=audio 5002 RTP/SAVP 0\na=crypto:1 F8_128_HMAC_SHA1_80 inline:\(Self.inline)\n"))
        }
    }

    @Test func eachSidesKeyProtectsWhatItSendsForTheOtherToRead() throws {
        let offerer = SDESCrypto.fresh(), answerer = SDESCrypto.fresh(tag: 1)
        let a = try SRTPContext(profile: .aes128CmHmacSha1_80, outboundMasterKey: offerer.keyAndSalt, inboundMasterKey: answerer.keyAndSalt)
        let b = try SRTPContext(profile: .aes128CmHmacSha1_80, outboundMasterKey: answerer.keyAndSalt, inboundMasterKey: offerer.keyAndSalt)
        var packet: [UInt8] = [0x80, 0x00, 0x00, 0x01, 0, 0, 0, 160, 1, 2, 3, 4] + Array(repeating: 0xFF, count: 160)
        let plain = packet
        try a.protect(rtp: &packet)
        #expect(packet.count == plain.count + 10 && packet != plain)
        try b.unprotect(rtp: &packet)
        #expect(packet == plain)
        var forged = plain
        forged[3] = 2  // the next packet (a sender never protects one sequence number twice)
        try a.protect(rtp: &forged)
        forged[20] ^= 1
        #expect(throws: SRTPError.authentication) { try b.unprotect(rtp: &forged) }
    }
}
