import Media
import Testing
@testable import SIP

/// Reading a phone's SDP offer and writing Parley's answer (RFC 3264 section 6): G.711 chosen in
/// the offerer's order, telephone-event kept, other sections declined, hold read, and each refusal.
@Suite struct PhoneAudioOfferTests {
    static func offer(_ media: String, session: String = "c=IN IP4 198.51.100.7\n") throws -> SessionDescription {
        try SessionDescription(parsing: "v=0\no=alice 1 1 IN IP4 198.51.100.7\ns=call\n\(session)t=0 0\n\(media)")
    }

    @Test func aPhonesOfferIsAnsweredWithItsFirstG711AndItsEvents() throws {
        let sdp = try Self.offer("m=audio 49170 RTP/AVP 18 8 0 101\na=rtpmap:18 G729/8000\na=rtpmap:101 telephone-event/8000\na=fmtp:101 0-16\na=ptime:20\n")
        let offer = try PhoneAudioOffer(sdp)
        #expect(offer.codec == .pcma && offer.telephoneEvent == 101 && offer.address == "198.51.100.7" && offer.port == 49170)
        #expect(offer.direction == .sendrecv && !offer.isHold && offer.ptime == 20)
        let answer = offer.answer(to: sdp, address: "203.0.113.5", port: 40000, sessionID: 7, version: 1)
        let text = answer.text
        #expect(text.contains("m=audio 40000 RTP/AVP 8 101\r\n"), "\(text)")
        #expect(text.contains("a=rtpmap:8 PCMA/8000\r\n") && text.contains("a=rtpmap:101 telephone-event/8000\r\n") && text.contains("a=fmtp:101 0-15\r\n"))
        #expect(text.contains("c=IN IP4 203.0.113.5\r\n") && text.contains("a=sendrecv\r\n"))
        // The answer reads back as an offer Parley would take.
        #expect(try PhoneAudioOffer(try SessionDescription(parsing: text)).codec == .pcma)
    }

    @Test func staticPayloadTypesNeedNoRtpmapAndVideoIsDeclined() throws {
        let sdp = try Self.offer("m=video 5000 RTP/AVP 96\na=rtpmap:96 H264/90000\nm=audio 5002 RTP/AVP 0\n")
        let offer = try PhoneAudioOffer(sdp)
        #expect(offer.codec == .pcmu && offer.index == 1 && offer.telephoneEvent == nil)
        let answer = offer.answer(to: sdp, address: "127.0.0.1", port: 6000, sessionID: 1, version: 1)
        #expect(answer.media.map(\.port) == [0, 6000])
    }

    @Test func holdIsReadFromTheDirectionOrANullAddress() throws {
        #expect(try PhoneAudioOffer(try Self.offer("m=audio 5002 RTP/AVP 0\na=sendonly\n")).isHold)
        let held = try Self.offer("m=audio 5002 RTP/AVP 0\n", session: "c=IN IP4 0.0.0.0\n")
        #expect(try PhoneAudioOffer(held).isHold)
        let answer = try PhoneAudioOffer(try Self.offer("m=audio 5002 RTP/AVP 0\na=sendonly\n"))
        #expect(answer.answer(to: try Self.offer("m=audio 5002 RTP/AVP 0\na=sendonly\n"), address: "127.0.0.1", port: 1, sessionID: 1, version: 2).text.contains("a=recvonly"))
    }

    @Test func offersParleyCannotAnswerAreRefused() throws {
        #expect(throws: PhoneAudioOffer.Refusal.noCommonCodec(offered: ["G729/8000", "opus/48000"])) {
            try PhoneAudioOffer(try Self.offer("m=audio 5002 RTP/AVP 18 111\na=rtpmap:18 G729/8000\na=rtpmap:111 opus/48000/2\n"))
        }
        #expect(throws: PhoneAudioOffer.Refusal.noAudio) { try PhoneAudioOffer(try Self.offer("m=video 5000 RTP/AVP 96\n")) }
        #expect(throws: PhoneAudioOffer.Refusal.secure("RTP/SAVP")) { try PhoneAudioOffer(try Self.offer("m=audio 5002 RTP/SAVP 0\n")) }
        #expect(throws: PhoneAudioOffer.Refusal.noAddress) { try PhoneAudioOffer(try Self.offer("m=audio 5002 RTP/AVP 0\n", session: "")) }
    }
}
