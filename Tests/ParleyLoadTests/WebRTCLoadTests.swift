import Testing
import TLS
@testable import parley_load

@Suite struct WebRTCLoadTests {
    static let fingerprint = DTLSFingerprint(bytes: Array(0..<32))!

    // MARK: The offer

    @Test func theOfferBundlesOpusAndTheDataChannelWithOneTransport() {
        let sdp = WebRTCLoadOffer.sdp(ufrag: "abcd", password: "0123456789abcdefghijkl", fingerprint: Self.fingerprint, ssrc: 42, sessionID: 7)
        #expect(sdp.hasPrefix("v=0\r\n"))
        #expect(sdp.contains("a=group:BUNDLE 0 1\r\n"))
        #expect(sdp.contains("m=audio 9 UDP/TLS/RTP/SAVPF 111\r\n"))
        #expect(sdp.contains("a=rtpmap:111 opus/48000/2\r\n"))
        #expect(sdp.contains("m=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\n"))
        #expect(sdp.contains("a=sctp-port:5000\r\n"))
        #expect(sdp.contains("a=fingerprint:sha-256 00:01:02:03:"))
        #expect(Self.lines(sdp, "a=ice-ufrag:abcd") == 2)
        #expect(Self.lines(sdp, "a=setup:actpass") == 2)
        #expect(sdp.contains("a=sendrecv\r\n") && sdp.contains("a=rtcp-mux\r\n"))
        #expect(!sdp.contains("\n\n"))
    }

    static func lines(_ text: String, _ line: String) -> Int {
        text.split(separator: "\r\n").count(where: { $0 == line })
    }

    // MARK: The answer

    static func answer(candidate: String = "a=candidate:1 1 udp 2130706431 127.0.0.1 40000 typ host\r\n") -> String {
        """
        v=0\r
        o=- 1 2 IN IP4 127.0.0.1\r
        s=-\r
        t=0 0\r
        a=group:BUNDLE 0 1\r
        a=ice-lite\r
        m=audio 40000 UDP/TLS/RTP/SAVPF 111\r
        c=IN IP4 127.0.0.1\r
        a=mid:0\r
        a=ice-ufrag:srvU\r
        a=ice-pwd:serverpasswordserverpass\r
        a=fingerprint:sha-256 \(Self.fingerprint.sdpValue)\r
        a=setup:passive\r
        \(candidate)a=rtcp-mux\r
        a=rtpmap:111 opus/48000/2\r
        m=application 40000 UDP/DTLS/SCTP webrtc-datachannel\r
        c=IN IP4 127.0.0.1\r
        a=mid:1\r
        a=sctp-port:5000\r

        """
    }

    @Test func theAnswerGivesTheCandidateTheCredentialsAndTheFingerprint() throws {
        let answer = try WebRTCLoadAnswer(parsing: Self.answer())
        #expect(answer.hostOctets == [127, 0, 0, 1])
        #expect(answer == WebRTCLoadAnswer(host: "127.0.0.1", port: 40000, ufrag: "srvU", password: "serverpasswordserverpass", fingerprint: Self.fingerprint))
    }

    @Test func anAnswerWithoutACandidateIsRefused() {
        #expect(throws: WebRTCLoadAnswer.Invalid.noUsableCandidate) { try WebRTCLoadAnswer(parsing: Self.answer(candidate: "")) }
    }

    @Test func anAnswerNamingAnotherMachineIsRefused() {
        let remote = "a=candidate:1 1 udp 2130706431 192.0.2.7 40000 typ host\r\n"
        #expect(throws: WebRTCLoadAnswer.Invalid.notLoopback("192.0.2.7")) { try WebRTCLoadAnswer(parsing: Self.answer(candidate: remote)) }
    }

    @Test func aCandidateIsReadOnlyForTheRTPComponentOverUDP() {
        #expect(WebRTCLoadAnswer.udpCandidate("1 1 udp 2130706431 127.0.0.1 40000 typ host")! == ("127.0.0.1", 40000))
        #expect(WebRTCLoadAnswer.udpCandidate("1 2 udp 2130706431 127.0.0.1 40000 typ host") == nil)
        #expect(WebRTCLoadAnswer.udpCandidate("1 1 tcp 2130706431 127.0.0.1 40000 typ host") == nil)
        #expect(WebRTCLoadAnswer.udpCandidate("1 1 udp 2130706431 127.0.0.1 99999 typ host") == nil)
        #expect(WebRTCLoadAnswer.udpCandidate("garbage") == nil)
    }

    // MARK: The offer's HTTP exchange

    @Test func theRequestCarriesTheOfferWithItsLengthAndTheKey() {
        let bytes = OfferExchange.request(path: "/v1/realtime/calls", host: "127.0.0.1:8080", offer: "v=0\r\n", bearer: "ek_x")
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.hasPrefix("POST /v1/realtime/calls HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"))
        #expect(text.contains("Content-Type: application/sdp\r\n"))
        #expect(text.contains("Authorization: Bearer ek_x\r\n"))
        #expect(text.hasSuffix("Content-Length: 5\r\nConnection: close\r\n\r\nv=0\r\n"))
    }

    @Test func aResponseIsCompleteOnceItsContentLengthHasArrived() throws {
        let whole = Array("HTTP/1.1 201 Created\r\nLocation: /v1/realtime/calls/rtc_1\r\nContent-Length: 4\r\n\r\nv=0\n".utf8)
        for cut in [0, 10, whole.count - 5, whole.count - 1] { #expect(try OfferExchange.response(Array(whole[..<cut])) == nil) }
        let response = try #require(try OfferExchange.response(whole))
        #expect(response.status == 201)
        #expect(response.header("location") == "/v1/realtime/calls/rtc_1")
        #expect(response.body == Array("v=0\n".utf8))
    }

    @Test func aResponseCutShortByTheServerIsAnError() {
        let part = Array("HTTP/1.1 201 Created\r\nContent-Length: 40\r\n\r\nv=0".utf8)
        #expect(throws: OfferExchange.Invalid.closedEarly) { try OfferExchange.response(part, closed: true) }
        #expect(throws: OfferExchange.Invalid.closedEarly) { try OfferExchange.response([], closed: true) }
    }

    @Test func aResponseWithoutLengthEndsWithTheConnection() throws {
        let bytes = Array("HTTP/1.1 503 Service Unavailable\r\n\r\nbusy".utf8)
        #expect(try OfferExchange.response(bytes) == nil)
        #expect(try OfferExchange.response(bytes, closed: true)?.body == Array("busy".utf8))
    }

    @Test func whatIsNotHTTPOrTooLargeIsRefused() {
        #expect(throws: OfferExchange.Invalid.notHTTP("SSH-2.0")) { try OfferExchange.response(Array("SSH-2.0\r\n\r\n".utf8)) }
        #expect(throws: OfferExchange.Invalid.badContentLength) { try OfferExchange.response(Array("HTTP/1.1 200 OK\r\nContent-Length: -3\r\n\r\n".utf8)) }
        #expect(throws: OfferExchange.Invalid.tooLarge) { try OfferExchange.response([UInt8](repeating: 65, count: OfferExchange.maxResponseBytes + 1)) }
    }

    // MARK: Turns

    static let ms: UInt64 = 1_000_000

    @Test func aTalkerSpeaksTheRecordingThenWaitsForTheReplyThenPauses() {
        var turns = WebRTCTalkTurns(frames: 3, pause: 500 * Self.ms, replyTimeout: 10_000 * Self.ms, startAt: 100 * Self.ms)
        #expect(turns.tick(now: 0) == nil)
        let sent = (0..<4).map { turns.tick(now: (100 + 20 * UInt64($0)) * Self.ms) }
        #expect(sent == [0, 1, 2, nil])
        #expect(turns.turnsSpoken == 1)
        turns.replyStarted(now: 300 * Self.ms)
        #expect(turns.phase == .hearingReply(since: 300 * Self.ms))
        #expect(turns.tick(now: 900 * Self.ms) == nil)
        turns.replyEnded(now: 1_000 * Self.ms)
        #expect(turns.repliesHeard == 1)
        #expect(turns.tick(now: 1_400 * Self.ms) == nil)
        #expect(turns.tick(now: 1_500 * Self.ms) == 0)
        #expect(turns.isSpeaking)
    }

    @Test func aReplyThatNeverComesTimesOutIntoTheNextTurn() {
        var turns = WebRTCTalkTurns(frames: 1, pause: 100 * Self.ms, replyTimeout: 1_000 * Self.ms, startAt: 0)
        #expect(turns.tick(now: 0) == 0)
        #expect(turns.phase == .awaitingReply(since: 0))
        #expect(turns.tick(now: 999 * Self.ms) == nil)
        #expect(turns.tick(now: 1_000 * Self.ms) == nil)
        #expect(turns.repliesMissed == 1)
        #expect(turns.tick(now: 1_100 * Self.ms) == 0)
        #expect(turns.turnsSpoken == 2)
    }

    @Test func aGreetedCallerListensToTheGreetingBeforeItsFirstTurn() {
        var turns = WebRTCTalkTurns(frames: 2, pause: 100 * Self.ms, replyTimeout: 5_000 * Self.ms, startAt: 0, greeted: true)
        #expect(turns.tick(now: 20 * Self.ms) == nil)
        turns.replyStarted(now: 40 * Self.ms)
        turns.replyEnded(now: 2_000 * Self.ms)
        #expect(turns.tick(now: 2_100 * Self.ms) == 0)
        #expect(turns.tick(now: 2_120 * Self.ms) == 1)
    }

    @Test func aReplyEndingWhileTheCallerSpeaksIsNotATurn() {
        var turns = WebRTCTalkTurns(frames: 10, pause: 0, replyTimeout: 1_000 * Self.ms, startAt: 0)
        _ = turns.tick(now: 0)
        turns.replyStarted(now: 0)
        turns.replyEnded(now: 0)
        #expect(turns.repliesHeard == 0)
        #expect(turns.phase == .speaking(next: 1))
    }

    // MARK: Set-up times

    @Test func setUpTimesRunFromTheOfferAndSkipMilestonesNotReached() {
        var times = WebRTCSetupTimes()
        times.add(offeredAt: 1_000, answeredAt: 3_000, iceAt: 4_000, dtlsAt: 9_000, channelAt: 12_000, firstAudioAt: 0)
        times.add(offeredAt: 2_000, answeredAt: 5_000, iceAt: 0, dtlsAt: 0, channelAt: 0, firstAudioAt: 0)
        times.add(offeredAt: 0, answeredAt: 5_000, iceAt: 6_000, dtlsAt: 0, channelAt: 0, firstAudioAt: 0)
        #expect(times.answer.count == 2)
        #expect(times.answer.maximum == 3_000)
        #expect(times.ice.count == 1)
        #expect(times.channel.maximum == 11_000)
        #expect(times.firstAudio.count == 0)
    }
}
