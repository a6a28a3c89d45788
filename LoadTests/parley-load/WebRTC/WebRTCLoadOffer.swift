import TLS

/// The SDP offer a load caller posts to `POST /v1/realtime/calls`: what a browser with a microphone
/// and an `oai-events` data channel offers (JSEP, RFC 9429 section 5.2.1), cut to what Parley reads.
/// One BUNDLE transport (RFC 9143) with rtcp-mux (RFC 5761): the audio section (Opus at payload
/// type 111, as Chrome numbers it) and the application section share the credentials and the
/// fingerprint. No candidates: Parley is ICE-lite and only answers checks (RFC 8445 section
/// 2.5), so the caller never needs to be reached first; `actpass` lets the answerer pick, and
/// Parley picks passive (RFC 8842 section 5.2), which makes this side the DTLS client.
enum WebRTCLoadOffer {
    static let opusPayloadType: UInt8 = 111

    static func sdp(ufrag: String, password: String, fingerprint: DTLSFingerprint, ssrc: UInt32, sessionID: UInt64) -> String {
        let transport = """
            c=IN IP4 0.0.0.0\r
            a=ice-ufrag:\(ufrag)\r
            a=ice-pwd:\(password)\r
            a=fingerprint:\(fingerprint)\r
            a=setup:actpass\r

            """
        return """
            v=0\r
            o=- \(sessionID) 2 IN IP4 127.0.0.1\r
            s=-\r
            t=0 0\r
            a=group:BUNDLE 0 1\r
            m=audio 9 UDP/TLS/RTP/SAVPF \(opusPayloadType)\r
            \(transport)a=mid:0\r
            a=sendrecv\r
            a=rtcp-mux\r
            a=rtpmap:\(opusPayloadType) opus/48000/2\r
            a=fmtp:\(opusPayloadType) minptime=10;useinbandfec=1\r
            a=ssrc:\(ssrc) cname:parley-load\r
            m=application 9 UDP/DTLS/SCTP webrtc-datachannel\r
            \(transport)a=mid:1\r
            a=sctp-port:5000\r
            a=max-message-size:262144\r

            """
    }
}
