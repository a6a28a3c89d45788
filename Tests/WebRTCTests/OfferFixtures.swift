/// Offers as the clients Parley serves write them, for the signalling tests.
enum OfferFixtures {
    /// Chrome's shape (M120 and later): BUNDLE of an audio section (Opus first, RED, telephone
    /// events) and a data channel, the transport attributes repeated in each section, trickle.
    static let chrome = """
        v=0\r
        o=- 4215775240449105457 2 IN IP4 127.0.0.1\r
        s=-\r
        t=0 0\r
        a=group:BUNDLE 0 1\r
        a=extmap-allow-mixed\r
        a=msid-semantic: WMS 3b2f2b4c-6d1e-4a8e-9c7f-1f0e2d3c4b5a\r
        m=audio 9 UDP/TLS/RTP/SAVPF 111 63 9 0 8 13 110 126\r
        c=IN IP4 0.0.0.0\r
        a=rtcp:9 IN IP4 0.0.0.0\r
        a=candidate:1160438246 1 udp 2122260223 192.168.92.78 52133 typ host generation 0 network-id 1 network-cost 10\r
        a=ice-ufrag:Jpbd\r
        a=ice-pwd:Fus4hRjMrpP46HRkXRz+RPdL\r
        a=ice-options:trickle\r
        a=fingerprint:sha-256 2B:08:B7:EE:E9:14:3B:61:93:68:C3:12:1A:6A:ED:0E:88:03:EB:A0:03:9E:EA:35:40:4E:25:3E:34:08:97:93\r
        a=setup:actpass\r
        a=mid:0\r
        a=extmap:1 urn:ietf:params:rtp-hdrext:ssrc-audio-level\r
        a=extmap:2 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time\r
        a=extmap:3 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01\r
        a=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid\r
        a=sendrecv\r
        a=msid:3b2f2b4c-6d1e-4a8e-9c7f-1f0e2d3c4b5a 8c1e5f3a-2b4d-4c6e-8f0a-1b2c3d4e5f60\r
        a=rtcp-mux\r
        a=rtcp-rsize\r
        a=rtpmap:111 opus/48000/2\r
        a=rtcp-fb:111 transport-cc\r
        a=fmtp:111 minptime=10;useinbandfec=1\r
        a=rtpmap:63 red/48000/2\r
        a=fmtp:63 111/111\r
        a=rtpmap:9 G722/8000\r
        a=rtpmap:0 PCMU/8000\r
        a=rtpmap:8 PCMA/8000\r
        a=rtpmap:13 CN/8000\r
        a=rtpmap:110 telephone-event/48000\r
        a=rtpmap:126 telephone-event/8000\r
        a=ssrc:3485940486 cname:r87hndGyheuxZxzo\r
        a=ssrc:3485940486 msid:3b2f2b4c-6d1e-4a8e-9c7f-1f0e2d3c4b5a 8c1e5f3a-2b4d-4c6e-8f0a-1b2c3d4e5f60\r
        m=application 9 UDP/DTLS/SCTP webrtc-datachannel\r
        c=IN IP4 0.0.0.0\r
        a=candidate:1160438246 1 udp 2122260223 192.168.92.78 52133 typ host generation 0 network-id 1 network-cost 10\r
        a=ice-ufrag:Jpbd\r
        a=ice-pwd:Fus4hRjMrpP46HRkXRz+RPdL\r
        a=ice-options:trickle\r
        a=fingerprint:sha-256 2B:08:B7:EE:E9:14:3B:61:93:68:C3:12:1A:6A:ED:0E:88:03:EB:A0:03:9E:EA:35:40:4E:25:3E:34:08:97:93\r
        a=setup:actpass\r
        a=mid:1\r
        a=sctp-port:5000\r
        a=max-message-size:262144\r

        """

    /// aiortc's shape (src/aiortc/rtcpeerconnection.py, sdp.py): gathered candidates in the offer
    /// and end-of-candidates, the credentials after them, three fingerprints (sha-256, -384, -512),
    /// Opus without fmtp, PCMU and PCMA, max-message-size 65536.
    static let aiortc = """
        v=0\r
        o=- 3946593090 3946593090 IN IP4 0.0.0.0\r
        s=-\r
        t=0 0\r
        a=group:BUNDLE 0 1\r
        a=msid-semantic:WMS *\r
        m=audio 54321 UDP/TLS/RTP/SAVPF 96 0 8\r
        c=IN IP4 192.168.1.20\r
        a=sendrecv\r
        a=extmap:1 urn:ietf:params:rtp-hdrext:sdes:mid\r
        a=extmap:2 urn:ietf:params:rtp-hdrext:ssrc-audio-level\r
        a=mid:0\r
        a=msid:5b0e4f0a-0e0d-4b3a-a3c2-8f1d2e3c4b5a 0c9d8e7f-6a5b-4c3d-2e1f-0a9b8c7d6e5f\r
        a=rtcp:9 IN IP4 0.0.0.0\r
        a=rtcp-mux\r
        a=ssrc:1627437442 cname:a5f2c1e0-9d8b-4c7a-b6e5-d4c3b2a1f0e9\r
        a=rtpmap:96 opus/48000/2\r
        a=rtpmap:0 PCMU/8000\r
        a=rtpmap:8 PCMA/8000\r
        a=candidate:8d7c8ba0a5e5e4a0d4bd4bd1cc6bfbf3 1 udp 2130706431 192.168.1.20 54321 typ host\r
        a=end-of-candidates\r
        a=ice-ufrag:lZ6W\r
        a=ice-pwd:5kJbBGyEWr0Ma9eoZ6dPYw3b\r
        a=fingerprint:sha-256 E0:AA:8C:D3:9C:AB:2C:46:F3:C8:BB:98:6C:A5:2A:76:E6:9E:DF:B8:5A:04:49:B6:3C:06:90:2B:04:74:AA:25\r
        a=fingerprint:sha-384 99:63:6F:92:16:2B:DF:E4:5C:9A:87:CF:33:3D:41:2E:70:B1:48:66:05:81:AC:FA:76:DF:A0:BD:45:23:90:C7:61:13:3C:C9:F6:E5:BE:2E:DC:CC:A8:67:78:62:20:A1\r
        a=fingerprint:sha-512 73:05:41:1B:CC:30:92:C2:20:40:4A:98:EC:E0:18:9A:74:11:51:27:7A:14:D4:2C:33:D3:47:57:95:0F:F5:95:B6:28:3B:AA:3A:D2:1F:49:39:8D:39:93:03:FA:9A:14:4D:DD:1B:03:70:85:7B:30:0B:B8:7D:11:39:01:6B:9B\r
        a=setup:actpass\r
        m=application 54321 UDP/DTLS/SCTP webrtc-datachannel\r
        c=IN IP4 192.168.1.20\r
        a=mid:1\r
        a=sctp-port:5000\r
        a=max-message-size:65536\r
        a=candidate:8d7c8ba0a5e5e4a0d4bd4bd1cc6bfbf3 1 udp 2130706431 192.168.1.20 54321 typ host\r
        a=end-of-candidates\r
        a=ice-ufrag:lZ6W\r
        a=ice-pwd:5kJbBGyEWr0Ma9eoZ6dPYw3b\r
        a=fingerprint:sha-256 E0:AA:8C:D3:9C:AB:2C:46:F3:C8:BB:98:6C:A5:2A:76:E6:9E:DF:B8:5A:04:49:B6:3C:06:90:2B:04:74:AA:25\r
        a=fingerprint:sha-384 99:63:6F:92:16:2B:DF:E4:5C:9A:87:CF:33:3D:41:2E:70:B1:48:66:05:81:AC:FA:76:DF:A0:BD:45:23:90:C7:61:13:3C:C9:F6:E5:BE:2E:DC:CC:A8:67:78:62:20:A1\r
        a=fingerprint:sha-512 73:05:41:1B:CC:30:92:C2:20:40:4A:98:EC:E0:18:9A:74:11:51:27:7A:14:D4:2C:33:D3:47:57:95:0F:F5:95:B6:28:3B:AA:3A:D2:1F:49:39:8D:39:93:03:FA:9A:14:4D:DD:1B:03:70:85:7B:30:0B:B8:7D:11:39:01:6B:9B\r
        a=setup:actpass\r

        """

    /// `text` with every occurrence of `target` replaced (Foundation-free).
    static func replacing(_ target: String, with replacement: String, in text: String) -> String {
        var result = ""
        var rest = text[...]
        while let range = rest.firstRange(of: target) {
            result += rest[..<range.lowerBound] + replacement
            rest = rest[range.upperBound...]
        }
        return result + rest
    }
}
