import Loop
import Media
import TLS
import WebRTC

/// One load caller's state, from its offer to its hang-up: the offer's TCP connection, then one UDP
/// socket for ICE, DTLS, SRTP and SCTP (bundled, RFC 8843), the data channel and the turns. Only
/// state and the per-call protocol steps live here; `WebRTCLoadRun` owns the poller and the clock.
final class WebRTCLoadCall {
    enum Phase: Equatable {
        /// Not yet started (calls are opened at a pace).
        case waiting
        /// The offer is being posted.
        case offering
        /// Answered; our Binding request has had no success response yet.
        case checking
        /// ICE succeeded; the DTLS handshake is under way (we are its client).
        case handshaking
        /// DTLS is up; SCTP and the `oai-events` channel are opening.
        case connecting
        /// The channel is open: the call is up.
        case open
        case failed(String)
        case hungUp
    }

    let index: Int
    var phase = Phase.waiting
    let local: ICECredentials
    let ssrc: UInt32
    /// The offer's connection, while it lasts.
    var tcp: Int32 = -1
    var request: [UInt8] = []
    var requestSent = 0
    var response: [UInt8] = []

    var answer: WebRTCLoadAnswer?
    var remote: SocketAddress?
    var udp: Int32 = -1
    var dtls: DTLSEndpoint?
    var srtp: SRTPContext?
    var channels: DataChannels
    var eventsStream: UInt16?
    var turns: WebRTCTalkTurns?
    /// Whether the response under way speaks (its audio's events came), so that its end is the
    /// audio buffer's, not the response's.
    var replyHasAudio = false

    /// The Binding request awaiting its response, and when consent is next refreshed.
    var pendingCheck: STUNTransactionID?
    var nextConsent: UInt64 = 0
    var sequenceNumber: UInt16
    let timestampBase: UInt32

    // Set-up milestones (monotonic nanoseconds; 0 until reached).
    var offeredAt: UInt64 = 0
    var answeredAt: UInt64 = 0
    var iceAt: UInt64 = 0
    var dtlsAt: UInt64 = 0
    var channelAt: UInt64 = 0
    var firstAudioAt: UInt64 = 0

    var audioSent = 0
    var audioReceived = 0

    init(index: Int) {
        self.index = index
        local = ICECredentials.generate()
        let random = OpenSSL.randomBytes(10)
        ssrc = random[0..<4].reduce(0) { $0 << 8 | UInt32($1) }
        sequenceNumber = UInt16(random[4]) << 8 | UInt16(random[5])
        timestampBase = random[6..<10].reduce(0) { $0 << 8 | UInt32($1) }
        var configuration = SCTPAssociation.Configuration()
        // As the server does (WebRTCCall): an SCTP packet must fit one AEAD DTLS record (13 bytes of
        // header, 8 of explicit nonce, 16 of tag) in one 1,200-byte datagram.
        configuration.maxPacketBytes = DTLSEndpoint.defaultMTU - 13 - 8 - 16
        channels = DataChannels(association: SCTPAssociation(configuration: configuration), role: .client)
    }

    var isOpen: Bool { phase == .open }
    var isSettled: Bool {
        switch phase {
        case .open, .failed, .hungUp: true
        default: false
        }
    }

    /// A Binding request as a controlling agent nominating this pair (RFC 8445 sections 7.1.1 and
    /// 8.1.1): USERNAME "theirs:ours", PRIORITY, ICE-CONTROLLING, USE-CANDIDATE, signed with the
    /// answerer's password, FINGERPRINT last. The same request refreshes consent (RFC 7675).
    func bindingRequest() -> [UInt8]? {
        guard let answer else { return nil }
        let random = OpenSSL.randomBytes(20)
        let id = STUNTransactionID(high: random[0..<4].reduce(0) { $0 << 8 | UInt32($1) }, low: random[4..<12].reduce(0) { $0 << 8 | UInt64($1) })
        let tieBreaker = random[12..<20].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        pendingCheck = id
        // RFC 8445 section 5.1.2.1: a host candidate's priority, type preference 126.
        let priority: UInt32 = 126 << 24 | 65535 << 8 | 255
        let message = STUNMessage(method: STUNMessage.binding, messageClass: .request, transactionID: id, attributes: [
            .username(Array("\(answer.ufrag):\(local.ufrag)".utf8)), .priority(priority),
            .iceControlling(tieBreaker: tieBreaker), .useCandidate,
        ])
        return message.signed(integrityKey: Array(answer.password.utf8))
    }

    /// True when the datagram is the success response to our pending check.
    func isCheckAnswered(_ datagram: UnsafeRawBufferPointer) -> Bool {
        guard let message = try? STUNMessage(parsing: datagram), message.messageClass == .successResponse,
              message.transactionID == pendingCheck else { return false }
        pendingCheck = nil
        return true
    }

    /// One 20 ms Opus packet as RTP (RFC 7587), its timestamp the tick's so that the gaps of DTX
    /// show as gaps in time, then protected with SRTP.
    func audioPacket(_ opus: [UInt8], tick: UInt64, marker: Bool, into buffer: inout [UInt8]) -> Bool {
        guard let srtp else { return false }
        let header = RTPHeader(marker: marker, payloadType: WebRTCLoadOffer.opusPayloadType, sequenceNumber: sequenceNumber,
                               timestamp: timestampBase &+ UInt32(truncatingIfNeeded: tick &* 960), ssrc: ssrc)
        header.write(payload: opus, into: &buffer, trailerCapacity: srtp.rtpTrailerLength)
        guard (try? srtp.protect(rtp: &buffer)) != nil else { return false }
        sequenceNumber &+= 1
        audioSent += 1
        return true
    }
}
