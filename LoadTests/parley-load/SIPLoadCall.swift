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

    /// The next RTP packet of its stream into `buffer`: `payload` after a 12-byte header
    /// (RFC 3550 section 5.1; payload type 0, PCMU).
    func nextPacket(_ payload: [UInt8], into buffer: inout [UInt8]) {
        buffer.removeAll(keepingCapacity: true)
        buffer.append(0x80)
        buffer.append(marker ? 0x80 : 0x00)
        buffer.append(UInt8(sequence >> 8))
        buffer.append(UInt8(sequence & 0xFF))
        for shift in stride(from: 24, through: 0, by: -8) { buffer.append(UInt8(truncatingIfNeeded: timestamp >> UInt32(shift))) }
        for shift in stride(from: 24, through: 0, by: -8) { buffer.append(UInt8(truncatingIfNeeded: ssrc >> UInt32(shift))) }
        buffer += payload
        marker = false
        sequence &+= 1
        timestamp &+= UInt32(payload.count)
        sent += 1
    }
}
