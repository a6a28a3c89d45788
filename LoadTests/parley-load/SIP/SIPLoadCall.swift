import Loop
import Media
import SIP

/// One caller of `parley-load sip`: its UDP socket (its RTP, and its SIP unless the run signals
/// from shared sockets, as a trunk does), its dialog, its milestones on the monotonic clock, and
/// its RTP both ways.
final class SIPLoadCall {
    enum Phase: Equatable {
        case idle, inviting, up, hangingUp, ended
        case failed(String)
    }

    let index: Int
    var phase = Phase.idle
    /// Its RTP socket, and the socket its SIP leaves from (the same one unless shared).
    var fd: Int32 = -1
    var signallingFD: Int32 = -1
    var dialog: SIPLoadMessages.Dialog?
    /// The INVITE, resent on timer A (500 ms, doubling) until a response comes.
    var invite: [UInt8] = []
    var inviteBranch = ""
    var provisional = false
    var resendAt: UInt64 = 0
    var resendInterval: UInt64 = 0
    var invitedAt: UInt64 = 0
    var answeredAt: UInt64 = 0
    /// The 2xx and our ACK of it, sent again for each 2xx the server resends.
    var answer: SIPMessage?
    var ack: [UInt8] = []
    var bye: [UInt8] = []
    var byeSentAt: UInt64 = 0
    var byeAnswered = false
    /// Where its RTP goes: the answer's address and port, from where the server's must come.
    var media: SocketAddress?
    var mediaPeer: TransportAddress?

    // Sending: a PCMU stream, one packet every 20 ms from its slot in the tick.
    let talking: Bool
    var frame: Int
    let ssrc: UInt32
    var sequence: UInt16
    var timestamp: UInt32
    var marker = true
    var sent = 0

    // Receiving: the server's packets against their own schedule.
    var arrivals = RTPArrivalTiming()

    init(index: Int, talking: Bool, firstFrame: Int) {
        self.index = index
        self.talking = talking
        frame = firstFrame
        var random = FastRandom()
        ssrc = UInt32(truncatingIfNeeded: random.next())
        sequence = UInt16(truncatingIfNeeded: random.next())
        timestamp = UInt32(truncatingIfNeeded: random.next())
    }

    var isUp: Bool { phase == .up }
    var isSettled: Bool {
        switch phase {
        case .idle, .inviting: false
        default: true
        }
    }

    /// Dials from `signallingPort`, its RTP on `mediaPort`: the dialog, the INVITE, and timer A
    /// (RFC 3261 section 17.1.1.2) from `now`. Its names carry `run`, so that the answers are found.
    func dial(serverPort: UInt16, run: String, signallingPort: UInt16, mediaPort: UInt16, now: UInt64) {
        let dialog = SIPLoadMessages.Dialog(serverPort: serverPort, callID: SIPLoadMessages.callID(index: index, run: run),
                                            fromTag: "\(run)t\(index)", signallingPort: signallingPort, mediaPort: mediaPort, user: "caller\(index)")
        self.dialog = dialog
        inviteBranch = "\(run)i\(index)"
        invite = SIPLoadMessages.invite(dialog, branch: inviteBranch, sessionID: index + 1)
        phase = .inviting
        invitedAt = now
        armResend(now: now)
    }

    /// Hangs up an answered call: its BYE, resent from `now` until answered. False before an answer.
    func hangUp(run: String, now: UInt64) -> Bool {
        guard let dialog, let answer else { return false }
        bye = SIPLoadMessages.bye(dialog, answer: answer, branch: "\(run)b\(index)")
        phase = .hangingUp
        byeSentAt = now
        armResend(now: now)
        return true
    }

    /// What is due to go again at `now`: the INVITE until a provisional response says it arrived,
    /// the BYE until it is answered; each resend doubles the wait, to 4 s at most (timers A and E).
    func resendDue(now: UInt64) -> [UInt8]? {
        let message: [UInt8]
        switch phase {
        case .inviting where !provisional: message = invite
        case .hangingUp: message = bye
        default: return nil
        }
        guard now >= resendAt else { return nil }
        resendInterval = min(resendInterval * 2, 4_000_000_000)
        resendAt = now + resendInterval
        return message
    }

    private func armResend(now: UInt64) {
        resendInterval = 500_000_000
        resendAt = now + resendInterval
    }

    /// The next RTP packet of its stream into `buffer`: `payload` after Media's RTP header
    /// (RFC 3550 section 5.1; payload type 0, PCMU), the first of the stream marked.
    func nextPacket(_ payload: [UInt8], into buffer: inout [UInt8]) {
        RTPHeader(marker: marker, payloadType: 0, sequenceNumber: sequence, timestamp: timestamp, ssrc: ssrc)
            .write(payload: payload, into: &buffer, trailerCapacity: 0)
        marker = false
        sequence &+= 1
        timestamp &+= UInt32(payload.count)
        sent += 1
    }
}
