import Media
import SIP
import Testing
@testable import parley_load

@Suite struct SIPLoadTests {
    static let dialog = SIPLoadMessages.Dialog(serverPort: 5060, callID: SIPLoadMessages.callID(index: 42, run: "r1"), fromTag: "r1t42",
                                               signallingPort: 40000, mediaPort: 40000, user: "caller42")

    // MARK: The messages

    @Test func theInviteOffersPCMUAndTelephoneEventFromItsOwnSocket() throws {
        let invite = try SIPMessageParser.parse(datagram: SIPLoadMessages.invite(Self.dialog, branch: "r1i42", sessionID: 43))
        #expect(invite.method == "INVITE")
        #expect(invite.requestURI?.description == "sip:parley@127.0.0.1:5060")
        let via = try invite.topVia()
        #expect(via.port == 40000 && via.branch == "z9hG4bKr1i42")
        #expect(invite.value("Via")?.hasSuffix(";rport") == true)
        #expect(try invite.callID() == "42.r1@parley-load")
        #expect(try invite.cseq().description == "1 INVITE")
        #expect(try invite.from().tag == "r1t42")
        #expect(try invite.to().tag == nil)
        let offer = try PhoneAudioOffer(SessionDescription(parsing: invite.body))
        #expect(offer.codec == .pcmu && offer.telephoneEvent == 101 && offer.port == 40000 && offer.address == "127.0.0.1" && offer.ptime == 20)
    }

    static func response(_ status: Int, contact: String? = "<sip:parley@127.0.0.1:5060>") throws -> SIPMessage {
        let invite = try SIPMessageParser.parse(datagram: SIPLoadMessages.invite(Self.dialog, branch: "r1i42", sessionID: 43))
        var response = SIPMessage.response(to: invite, status: status, toTag: "srv")
        if let contact { response.add("Contact", contact) }
        return response
    }

    @Test func theAckOfA2xxIsANewTransactionToTheAnswersContact() throws {
        let ack = try SIPMessageParser.parse(datagram: SIPLoadMessages.ack(Self.dialog, response: Self.response(200, contact: "<sip:parley@127.0.0.9:5070>"),
                                                                           inviteBranch: "r1i42", ackBranch: "r1a42"))
        #expect(ack.method == "ACK")
        #expect(ack.requestURI?.description == "sip:parley@127.0.0.9:5070")
        #expect(try ack.topVia().branch == "z9hG4bKr1a42")
        #expect(try ack.to().tag == "srv")
        #expect(try ack.cseq().description == "1 ACK")
    }

    @Test func theAckOfAFailureBelongsToTheInvitesTransaction() throws {
        let ack = try SIPMessageParser.parse(datagram: SIPLoadMessages.ack(Self.dialog, response: Self.response(503, contact: nil),
                                                                           inviteBranch: "r1i42", ackBranch: "unused"))
        #expect(ack.requestURI?.description == "sip:parley@127.0.0.1:5060")
        #expect(try ack.topVia().branch == "z9hG4bKr1i42")
        #expect(try ack.to().tag == "srv")
    }

    @Test func theByeIsTheSecondRequestInTheDialog() throws {
        let bye = try SIPMessageParser.parse(datagram: SIPLoadMessages.bye(Self.dialog, answer: Self.response(200), branch: "r1b42"))
        #expect(bye.method == "BYE")
        #expect(try bye.cseq().description == "2 BYE")
        #expect(try bye.to().tag == "srv" && bye.from().tag == "r1t42")
    }

    @Test func aCallIDNamesItsCaller() {
        #expect(SIPLoadMessages.index(ofCallID: SIPLoadMessages.callID(index: 917, run: "x9")) == 917)
        #expect(SIPLoadMessages.index(ofCallID: "someone-else@example.com") == nil)
    }

    @Test func aCallersPacketsArePCMUWithTheirNumbersRunningOn() {
        let call = SIPLoadCall(index: 0, talking: false, firstFrame: 0)
        var packet: [UInt8] = []
        call.nextPacket(PhoneSpeech.silence, into: &packet)
        #expect(packet.count == 172 && packet[0] == 0x80 && packet[1] == 0x80)
        let sequence = UInt16(packet[2]) << 8 | UInt16(packet[3])
        let timestamp = packet[4..<8].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        call.nextPacket(PhoneSpeech.silence, into: &packet)
        #expect(packet[1] == 0x00)
        #expect(UInt16(packet[2]) << 8 | UInt16(packet[3]) == sequence &+ 1)
        #expect(packet[4..<8].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } == timestamp &+ 160)
    }

    // MARK: Frame lag

    /// Packets of a 20 ms stream: `late[i]` ms after the i-th frame's time (from 10 s on any clock).
    static func lags(_ late: [Double], warmUp: [Double] = [], sequenceSkips: Set<Int> = []) -> (LatencyRecorder, missing: Int) {
        var timing = RTPArrivalTiming()
        var missing = 0
        var sequence: UInt16 = 65_530
        var timestamp: UInt32 = 4_294_967_000
        func send(_ lateMs: Double, frame: Int) {
            if sequenceSkips.contains(frame) { sequence &+= 1 }
            let at = 10_000_000_000 + Int64(frame) * 20_000_000 + Int64(lateMs * 1e6)
            missing += timing.arrived(sequence: sequence, timestamp: timestamp, at: at)?.missing ?? 0
            sequence &+= 1
            timestamp &+= 160
        }
        for (i, late) in warmUp.enumerated() { send(late, frame: i) }
        timing.beginWindow(expected: late.count)
        for (i, late) in late.enumerated() { send(late, frame: warmUp.count + i) }
        var lags = LatencyRecorder()
        timing.endWindow(into: &lags)
        return (lags, missing)
    }

    @Test func aStreamAlwaysTheSameTimeIntoItsTickHasNoLag() {
        let (lags, _) = Self.lags(Array(repeating: 3, count: 50))
        #expect(lags.count == 50 && lags.maximum <= 1_000)
    }

    @Test func aPacketLaterThanTheStreamsBestShowsByHowMuch() {
        var late = Array(repeating: 1.0, count: 100)
        late[40] = 4.5
        let (lags, _) = Self.lags(late)
        #expect(lags.maximum == 3_500_000)
        #expect(lags.count(above: 1_000_000) == 1)
    }

    @Test func theScheduleIsPlacedByTheWindowNotTheWarmUp() {
        // Early in the warm-up the stream ran 8 ms earlier (a loop's clock set back since).
        let (lags, _) = Self.lags(Array(repeating: 9, count: 50), warmUp: Array(repeating: 1, count: 50))
        #expect(lags.maximum <= 1_000)
    }

    @Test func aSkippedSequenceNumberIsAMissingPacketAcrossTheWrap() {
        let (_, missing) = Self.lags(Array(repeating: 0, count: 20), sequenceSkips: [7, 12])
        #expect(missing == 2)
    }

    @Test func afterALongSilenceTheScheduleStartsAgain() {
        // Frames 10 on come 300 ms late and stay so (a stalled sender that skipped frames): the
        // packet after the silence shows it; those after it are timed on the new schedule.
        let late = (0..<30).map { $0 < 10 ? 0.0 : 300.0 }
        let (lags, _) = Self.lags(late)
        #expect(lags.count == 30)
        #expect(lags.count(above: 1_000_000) == 1)
        #expect(lags.maximum == 300_000_000)
    }
}
