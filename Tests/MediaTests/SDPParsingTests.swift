import Testing
@testable import Media

/// A SIP phone's offer (RTP/AVP, PCMU and PCMA, RFC 4733 events), with LF line endings and the
/// connection and direction at session level, as SIP user agents write them.
let sipOffer = """
    v=0
    o=alice 2890844526 2890844527 IN IP4 198.51.100.7
    s=call
    c=IN IP4 198.51.100.7
    t=0 0
    a=sendonly
    m=audio 49170 RTP/AVP 0 8 101
    a=rtpmap:0 PCMU/8000
    a=rtpmap:8 PCMA/8000
    a=rtpmap:101 telephone-event/8000
    a=fmtp:101 0-16
    a=ptime:20
    a=ssrc:305419896 cname:alice@example.com

    """

/// Firefox writes the fingerprint, ice-options and setup once, at session level (RFC 8122 section 5,
/// RFC 8839 section 5.6, RFC 4145 section 4), and its credentials in each section.
let sessionLevelOffer = """
    v=0\r
    o=mozilla...THIS_IS_SDPARTA-99.0 7514673380034989017 0 IN IP4 0.0.0.0\r
    s=-\r
    t=0 0\r
    a=fingerprint:sha-256 39:4A:09:1E:0E:33:32:85:51:03:49:95:54:0B:41:09:A2:10:60:CC:39:8F:C0:C4:45:FC:37:3A:55:EA:11:74\r
    a=group:BUNDLE 0 1\r
    a=ice-options:trickle\r
    a=ice-ufrag:9889e0c4\r
    a=ice-pwd:d30a5aec4dd81f07d4ff3344209400ab\r
    a=setup:actpass\r
    m=audio 9 UDP/TLS/RTP/SAVPF 109 101\r
    c=IN IP4 0.0.0.0\r
    a=mid:0\r
    a=recvonly\r
    a=rtcp-mux\r
    a=rtpmap:109 opus/48000/2\r
    a=fmtp:109 maxplaybackrate=48000;stereo=1;useinbandfec=1\r
    a=rtpmap:101 telephone-event/8000/1\r
    m=application 9 UDP/DTLS/SCTP webrtc-datachannel\r
    c=IN IP4 0.0.0.0\r
    a=mid:1\r
    a=ice-ufrag:other123\r
    a=ice-pwd:0123456789abcdef0123456789abcdef\r
    a=fingerprint:sha-1 00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF:00:11:22:33\r
    a=setup:active\r
    a=sendrecv\r
    a=sctp-port:5000\r
    a=max-message-size:1073741823\r

    """

struct SDPParsingTests {
    @Test func theSessionPartAndEachMediaSectionAreKeptInOrder() throws {
        let sdp = try SessionDescription(parsing: sipOffer)
        #expect(sdp.lines.map(\.type) == ["v", "o", "s", "c", "t"])
        #expect(sdp.origin == "alice 2890844526 2890844527 IN IP4 198.51.100.7")
        #expect(sdp.sessionName == "call")
        #expect(sdp.attributes == [SDPAttribute("sendonly")])
        #expect(sdp.media.count == 1)
        let audio = sdp.media[0]
        #expect(audio.type == "audio" && audio.port == 49170 && audio.portCount == nil && audio.proto == "RTP/AVP")
        #expect(audio.formats == ["0", "8", "101"])
        #expect(audio.attributes.map(\.name) == ["rtpmap", "rtpmap", "rtpmap", "fmtp", "ptime", "ssrc"])
        #expect(audio.attribute("ptime") == SDPAttribute("ptime", "20"))
    }

    @Test func rtpmapsReadPayloadTypeEncodingClockAndChannels() throws {
        let sdp = try SessionDescription(parsing: sipOffer)
        let audio = sdp.media[0]
        #expect(audio.payloadTypes == [0, 8, 101])
        #expect(audio.rtpMap(payloadType: 0) == SDPRTPMap(payloadType: 0, encoding: "PCMU", clockRate: 8000))
        #expect(audio.rtpMap(payloadType: 101)?.encoding == "telephone-event")
        #expect(audio.formatParameters(payloadType: 101) == "0-16")
        #expect(audio.formatParameters(payloadType: 0) == nil)
        #expect(SDPRTPMap("111 opus/48000/2") == SDPRTPMap(payloadType: 111, encoding: "opus", clockRate: 48000, channels: 2))
        #expect(SDPRTPMap("128 opus/48000/2") == nil)
        #expect(SDPRTPMap("111 opus") == nil)
        #expect(SDPRTPMap("111 opus/48000/2/1") == nil)
    }

    @Test func connectionAndDirectionAtSessionLevelApplyToTheSection() throws {
        let sdp = try SessionDescription(parsing: sipOffer)
        let audio = sdp.media[0]
        #expect(audio.connection == nil)
        #expect(sdp.connection(of: audio) == SDPConnection(addressType: "IP4", address: "198.51.100.7"))
        #expect(audio.direction == nil)
        #expect(sdp.direction(of: audio) == .sendonly)
    }

    @Test func aSectionWithNoDirectionAnywhereIsSendrecv() throws {
        let sdp = try SessionDescription(parsing: "v=0\no=- 1 1 IN IP4 0.0.0.0\ns=-\nt=0 0\nm=audio 9 RTP/AVP 0\n")
        #expect(sdp.direction(of: sdp.media[0]) == .sendrecv)
    }

    @Test func ssrcAttributesReadTheirSourceAndValue() throws {
        let audio = try SessionDescription(parsing: sipOffer).media[0]
        #expect(audio.ssrcAttributes == [SDPSSRCAttribute(ssrc: 305_419_896, attribute: "cname", value: "alice@example.com")])
        #expect(audio.ssrcs == [305_419_896])
        #expect(SDPSSRCAttribute("4294967296 cname:x") == nil)
    }

    @Test func iceCredentialsFingerprintAndSetupAreInheritedFromTheSession() throws {
        let sdp = try SessionDescription(parsing: sessionLevelOffer)
        let audio = sdp.media[0]
        #expect(audio.iceUfrag == nil && audio.fingerprints.isEmpty && audio.setup == nil)
        #expect(sdp.iceUfrag(of: audio) == "9889e0c4")
        #expect(sdp.icePwd(of: audio) == "d30a5aec4dd81f07d4ff3344209400ab")
        #expect(sdp.iceOptions(of: audio) == ["trickle"])
        #expect(sdp.fingerprints(of: audio).map(\.algorithm) == ["sha-256"])
        #expect(sdp.fingerprints(of: audio).first?.bytes.count == 32)
        #expect(sdp.setup(of: audio) == .actpass)
        #expect(sdp.direction(of: audio) == .recvonly)
    }

    @Test func aSectionsOwnValuesOverrideTheSessions() throws {
        let sdp = try SessionDescription(parsing: sessionLevelOffer)
        let data = sdp.media[1]
        #expect(sdp.iceUfrag(of: data) == "other123")
        #expect(sdp.fingerprints(of: data).map(\.algorithm) == ["sha-1"])
        #expect(sdp.setup(of: data) == .active)
        #expect(sdp.direction(of: data) == .sendrecv)
    }

    @Test func bundleMidSctpAndMessageSizeRead() throws {
        let sdp = try SessionDescription(parsing: sessionLevelOffer)
        #expect(sdp.bundle == ["0", "1"])
        #expect(sdp.groups == [SDPGroup(semantics: "BUNDLE", mids: ["0", "1"])])
        #expect(sdp.media.map(\.mid) == ["0", "1"])
        #expect(sdp.media[0].rtcpMux && !sdp.media[1].rtcpMux)
        #expect(sdp.media[1].formats == ["webrtc-datachannel"])
        #expect(sdp.media[1].sctpPort == 5000)
        #expect(sdp.media[1].maxMessageSize == 1_073_741_823)
        #expect(sdp.media[0].sctpPort == nil)
        #expect(!sdp.isICELite)
    }

    @Test func fingerprintsReadHexOfEitherCaseAndWriteUpperCase() {
        let fingerprint = SDPFingerprint("SHA-256 0a:Bc:FF")
        #expect(fingerprint == SDPFingerprint(algorithm: "sha-256", bytes: [0x0A, 0xBC, 0xFF]))
        #expect(fingerprint?.attributeValue == "sha-256 0A:BC:FF")
        #expect(SDPFingerprint("sha-256 0A:B") == nil)
        #expect(SDPFingerprint("sha-256 0A::BC") == nil)
        #expect(SDPFingerprint("sha-256") == nil)
        #expect(SDPFingerprint("sha-256 " + Array(repeating: "AA", count: 65).joined(separator: ":")) == nil)
    }

    @Test func candidatesAreKeptRaw() throws {
        let text = sessionLevelOffer.replacingOccurrences(of: "a=mid:0\r\n", with: "a=mid:0\r\na=candidate:0 1 UDP 2122187007 192.168.99.58 45791 typ host\r\na=end-of-candidates\r\n")
        let sdp = try SessionDescription(parsing: text)
        #expect(sdp.media[0].candidates == ["0 1 UDP 2122187007 192.168.99.58 45791 typ host"])
        #expect(sdp.media[0].attribute("end-of-candidates") == SDPAttribute("end-of-candidates"))
    }

    @Test func anMLineWithAPortCountIsRead() throws {
        let sdp = try SessionDescription(parsing: "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\nm=video 49170/2 RTP/AVP 31\r\n")
        #expect(sdp.media[0].port == 49170 && sdp.media[0].portCount == 2)
        #expect(sdp.media[0].mediaLine == "video 49170/2 RTP/AVP 31")
    }
}

extension String {
    /// Foundation-free replacement, for building variants of the fixtures.
    func replacingOccurrences(of target: String, with replacement: String) -> String {
        guard !target.isEmpty else { return self }
        var result = ""
        var rest = self[...]
        while let range = rest.firstRange(of: target) {
            result += rest[..<range.lowerBound] + replacement
            rest = rest[range.upperBound...]
        }
        return result + rest
    }
}
