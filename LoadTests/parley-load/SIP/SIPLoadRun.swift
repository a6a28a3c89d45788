import Loop
import Media
import SIP
#if canImport(Glibc)
import Glibc
#endif

/// Many SIP calls over UDP from one thread, as phones make them: each caller's INVITE (a PCMU
/// offer; resent on timer A until a response comes), the ACK of its 200, then RTP both ways, one
/// 20 ms PCMU packet from each caller every 20 ms (the talking share the recording, the rest
/// silence, as a phone streams whether anyone speaks or not), spread over the 20 ms in 1 ms slots;
/// at the end a BYE each. The server's packets are timed on the kernel's receive clock against
/// their own 20 ms schedule (`RTPArrivalTiming`). One epoll instance (`Poller`) drives it.
///
/// Each caller's SIP leaves from its RTP socket by default, so the server's loops, which share the
/// SIP port by SO_REUSEPORT and are chosen by a hash of the sender's address and port, each get a
/// share of the calls, as they would from many phones. `trunkSockets` sends every INVITE from that
/// many sockets instead, as a trunk or a PBX does from its one SIP port.
final class SIPLoadRun {
    struct Settings {
        /// The server's SIP port on 127.0.0.1.
        let serverPort: UInt16
        let calls: Int
        let talking: Int
        /// The recording as 20 ms µ-law frames, looped by the talking callers.
        let frames: [[UInt8]]
        let openRate: Double
        let invitesInFlight: Int
        /// 0: each caller signals from its own socket.
        let trunkSockets: Int
        let setupTimeout: Double
    }

    static let frameNanoseconds: UInt64 = 20_000_000
    static let slots = 20
    static let slotNanoseconds = frameNanoseconds / UInt64(slots)
    /// A reply packet more than this after the one before it left a hole in the stream.
    static let gapNanoseconds: UInt64 = 40_000_000

    let settings: Settings
    let calls: [SIPLoadCall]
    /// Why calls failed, by reason.
    private(set) var failures: [String: Int] = [:]
    /// INVITE → 200, for every call answered.
    private(set) var setup = LatencyRecorder()
    /// INVITEs sent again (timer A), all told.
    private(set) var inviteResends = 0
    /// BYEs from the server (a call it ended: media timeout, no ACK, shutting down).
    private(set) var serverByes = 0
    /// RTP from anywhere but the call's answer (another program's stream to a port this run reused).
    private(set) var strangers = 0

    /// While measuring: the server's packets against their schedule, and what the client sent.
    private(set) var lag = LatencyRecorder()
    private(set) var tickLateness = LatencyRecorder()
    private(set) var sentMeasuring = 0
    private(set) var receivedMeasuring = 0
    private(set) var missingMeasuring = 0
    private(set) var gapsMeasuring = 0
    private(set) var longestInterval: UInt64 = 0
    /// Silences after which a stream's schedule started again (`RTPArrivalTiming.resyncNanoseconds`).
    private(set) var stallsMeasuring = 0
    private(set) var soundMeasuring = 0

    private let poller: Poller
    private let server: SocketAddress
    private var trunk: [(fd: Int32, port: UInt16)] = []
    private let runTag: String
    private var nextToOpen = 0
    private var inviting = 0
    private let startedAt: UInt64
    private var slotCalls: [[Int]]
    private var slot = 0
    private var slotDue: UInt64
    private var measuring = false
    private var sending = true
    private let receiveBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 16)
    private var packet: [UInt8] = []

    init(_ settings: Settings) throws {
        self.settings = settings
        poller = try Poller()
        server = .ipv4(127, 0, 0, 1, port: settings.serverPort)
        var random = FastRandom()
        runTag = String(random.next() >> 16, radix: 36)
        // The talking callers are spread over the calls, and each starts at its own place in the
        // recording, so that they neither crowd one loop nor speak in unison.
        let every = settings.talking > 0 ? Double(settings.calls) / Double(settings.talking) : 0
        var talking = Set<Int>()
        for k in 0..<settings.talking { talking.insert(min(settings.calls - 1, Int(Double(k) * every))) }
        calls = (0..<settings.calls).map { i in
            SIPLoadCall(index: i, talking: talking.contains(i), firstFrame: settings.frames.isEmpty ? 0 : (i * 37) % settings.frames.count)
        }
        slotCalls = (0..<Self.slots).map { s in Array(stride(from: s, to: settings.calls, by: Self.slots)) }
        for _ in 0..<settings.trunkSockets {
            let (fd, port) = try Self.socket()
            try poller.add(fd, events: Poller.readable, token: UInt64(settings.calls + trunk.count))
            trunk.append((fd, port))
        }
        startedAt = MonotonicClock.nanoseconds()
        slotDue = startedAt + Self.slotNanoseconds
        packet.reserveCapacity(200)
    }

    deinit {
        receiveBuffer.deallocate()
        for call in calls where call.fd >= 0 { Sys.close(call.fd) }
        for socket in trunk { Sys.close(socket.fd) }
    }

    var upCalls: Int { calls.count(where: \.isUp) }
    var settled: Bool { nextToOpen == calls.count && inviting == 0 }

    // MARK: Phases

    /// Places the calls at `openRate` a second, at most `invitesInFlight` unanswered at once, until
    /// every call is up or failed, or the deadline (those still unanswered then fail).
    func open(deadline: UInt64, progress: Progress) {
        while MonotonicClock.nanoseconds() < deadline && !settled {
            step()
            progress.update("opening  \(Format.grouped(upCalls))/\(Format.grouped(calls.count)) calls up, \(Format.grouped(failures.values.reduce(0, +))) failed")
        }
        for call in calls where !call.isSettled { fail(call, call.phase == .idle ? "not placed by the connect deadline" : "not answered by the connect deadline") }
    }

    /// Streams until `deadline`, or until `done` says stop; a measured window's lags are worked
    /// out at its end (`RTPArrivalTiming`).
    func stream(until deadline: UInt64, measuring: Bool, progress: Progress, until done: () -> Bool = { false }) {
        self.measuring = measuring
        if measuring {
            let frames = Int((deadline - min(deadline, MonotonicClock.nanoseconds())) / Self.frameNanoseconds) + 10
            for call in calls where call.isUp { call.arrivals.beginWindow(expected: frames) }
        }
        while MonotonicClock.nanoseconds() < deadline && !done() {
            step()
            progress.update("\(measuring ? "measuring" : "streaming")  \(Format.grouped(upCalls)) calls up, \(Format.grouped(sentMeasuring)) packets out, \(Format.grouped(receivedMeasuring)) in")
        }
        if measuring {
            for call in calls { call.arrivals.endWindow(into: &lag) }
        }
        self.measuring = false
    }

    /// A BYE from every call that is up (resent until answered), until each is answered or the
    /// deadline; then every socket closes. Returns the BYEs answered.
    @discardableResult
    func hangUp(deadline: UInt64, progress: Progress) -> Int {
        sending = false
        let now = MonotonicClock.nanoseconds()
        for call in calls where call.isUp && call.hangUp(run: runTag, now: now) { sendSignalling(call.bye, call) }
        while MonotonicClock.nanoseconds() < deadline && calls.contains(where: { $0.phase == .hangingUp }) {
            step()
            progress.update("hanging up  \(Format.grouped(calls.count(where: \.byeAnswered))) BYEs answered")
        }
        for call in calls where call.fd >= 0 {
            Sys.close(call.fd)
            call.fd = -1
        }
        return calls.count(where: \.byeAnswered)
    }

    // MARK: The loop

    private func step() {
        let now = MonotonicClock.nanoseconds()
        openMore(now: now)
        let wait = slotDue > now ? Int32((slotDue - now + 999_999) / 1_000_000) : 0
        poller.wait(timeoutMilliseconds: min(wait, 20)) { token, _ in
            let index = Int(token)
            if index < calls.count { readCall(calls[index]) } else if index - calls.count < trunk.count { readTrunk(trunk[index - calls.count].fd) }
        }
        let after = MonotonicClock.nanoseconds()
        // Far behind (the process was not scheduled): start again from now rather than burst.
        if after > slotDue + 5 * Self.frameNanoseconds {
            if measuring { tickLateness.record(after - slotDue) }
            slotDue = after
        }
        while slotDue <= after { fireSlot(now: after) }
    }

    private func openMore(now: UInt64) {
        let due = min(calls.count, Int(Double(now - startedAt) / 1e9 * settings.openRate) + 1)
        while nextToOpen < due && inviting < settings.invitesInFlight {
            let call = calls[nextToOpen]
            nextToOpen += 1
            place(call, now: now)
        }
    }

    /// One 1 ms slot of the 20 ms frame: its callers' timers and RTP packets.
    private func fireSlot(now: UInt64) {
        if measuring { tickLateness.record(now - slotDue) }
        for index in slotCalls[slot] {
            let call = calls[index]
            timers(call, now: now)
            guard call.isUp, sending, let media = call.media else { continue }
            let payload = call.talking ? settings.frames[call.frame % settings.frames.count] : PhoneSpeech.silence
            if call.talking { call.frame += 1 }
            call.nextPacket(payload, into: &packet)
            packet.withUnsafeBytes { _ = try? Sys.sendDatagram(call.fd, $0, to: media) }
            if measuring { sentMeasuring += 1 }
        }
        slot = (slot + 1) % Self.slots
        slotDue += Self.slotNanoseconds
    }

    // MARK: Signalling

    /// A caller's UDP socket on 127.0.0.1 and its port; `timestamped`, its datagrams carry the
    /// kernel's receive time.
    static func socket(timestamped: Bool = true) throws -> (Int32, UInt16) {
        let fd = try Sys.datagramSocket(family: Int32(AF_INET))
        do {
            try Sys.bindDatagram(fd, to: .ipv4(127, 0, 0, 1, port: 0))
            if timestamped { try Sys.timestampReceptions(fd) }
            return (fd, UInt16(try Sys.localAddress(fd).port))
        } catch {
            Sys.close(fd)
            throw error
        }
    }

    private func place(_ call: SIPLoadCall, now: UInt64) {
        let port: UInt16
        do {
            (call.fd, port) = try Self.socket()
            try poller.add(call.fd, events: Poller.readable, token: UInt64(call.index))
        } catch { return fail(call, "socket: \(error)") }
        let signalling = trunk.isEmpty ? (call.fd, port) : trunk[call.index % trunk.count]
        call.signallingFD = signalling.0
        call.dial(serverPort: settings.serverPort, run: runTag, signallingPort: signalling.1, mediaPort: port, now: now)
        inviting += 1
        sendSignalling(call.invite, call)
    }

    private func timers(_ call: SIPLoadCall, now: UInt64) {
        if call.phase == .inviting, now - call.invitedAt > MonotonicClock.nanoseconds(settings.setupTimeout) {
            return fail(call, "no final response in \(Format.fixed(settings.setupTimeout, 0)) s")
        }
        guard let again = call.resendDue(now: now) else { return }
        sendSignalling(again, call)
        if call.phase == .inviting { inviteResends += 1 }
    }

    private func sendSignalling(_ bytes: [UInt8], _ call: SIPLoadCall) {
        guard call.signallingFD >= 0 else { return }
        bytes.withUnsafeBytes { _ = try? Sys.sendDatagram(call.signallingFD, $0, to: server) }
    }

    private func received(sip datagram: UnsafeRawBufferPointer, on call: SIPLoadCall?, now: UInt64) {
        guard let message = try? SIPMessageParser.parse(datagram: datagram), let callID = try? message.callID(),
              let index = SIPLoadMessages.index(ofCallID: callID), index < calls.count else { return }
        let call = call ?? calls[index]
        guard call.index == index else { return }
        if message.isRequest {
            // The server ends the call: its BYE answered.
            let reply = SIPLoadMessages.ok(to: message)
            reply.withUnsafeBytes { _ = try? Sys.sendDatagram(call.signallingFD, $0, to: server) }
            guard message.method == "BYE" else { return }
            if call.isUp {
                serverByes += 1
                fail(call, "the server hung up")
            } else if call.phase == .hangingUp {
                // Its BYE crossed ours.
                call.phase = .ended
            }
            return
        }
        guard let status = message.status, let cseq = try? message.cseq(), let dialog = call.dialog else { return }
        switch cseq.method {
        case "INVITE":
            if status < 200 {
                call.provisional = true
            } else if status < 300 {
                if call.answer == nil {
                    guard call.phase == .inviting else { return }
                    call.answeredAt = now
                    setup.record(now - call.invitedAt)
                    call.answer = message
                    call.ack = SIPLoadMessages.ack(dialog, response: message, inviteBranch: call.inviteBranch, ackBranch: "\(runTag)a\(call.index)")
                    inviting -= 1
                    call.phase = .up
                    guard let media = SIPLoadMessages.mediaAddress(message) else { return fail(call, "the answer's SDP names no RTP address") }
                    call.media = media
                    call.mediaPeer = TransportAddress(media)
                }
                // Every 2xx, the first or one resent because our ACK was lost, is acknowledged.
                sendSignalling(call.ack, call)
            } else {
                sendSignalling(SIPLoadMessages.ack(dialog, response: message, inviteBranch: call.inviteBranch, ackBranch: ""), call)
                if call.phase == .inviting { fail(call, "INVITE answered \(status)") }
            }
        case "BYE" where status >= 200:
            call.byeAnswered = true
            if call.phase == .hangingUp { call.phase = .ended }
        default:
            break
        }
    }

    // MARK: Datagrams

    private func readCall(_ call: SIPLoadCall) {
        var from = SocketAddress()
        var at: Int64 = 0
        while call.fd >= 0 {
            let count: Int?
            do { count = try Sys.receiveDatagram(call.fd, into: receiveBuffer, from: &from, receivedAt: &at) } catch { return }
            guard let count, count > 0 else { return }
            let datagram = UnsafeRawBufferPointer(rebasing: receiveBuffer[0..<count])
            if datagram[0] & 0xC0 == 0x80 {
                guard let peer = call.mediaPeer, TransportAddress(from) == peer else {
                    strangers += 1
                    continue
                }
                receivedRTP(datagram, call, at: at)
            } else {
                received(sip: datagram, on: call, now: MonotonicClock.nanoseconds())
            }
        }
    }

    private func readTrunk(_ fd: Int32) {
        var from = SocketAddress()
        while true {
            let count: Int?
            do { count = try Sys.receiveDatagram(fd, into: receiveBuffer, from: &from) } catch { return }
            guard let count, count > 0 else { return }
            received(sip: UnsafeRawBufferPointer(rebasing: receiveBuffer[0..<count]), on: nil, now: MonotonicClock.nanoseconds())
        }
    }

    /// A packet of the server's stream: timed against its schedule; its payload counted as sound
    /// when it is not all µ-law silence.
    private func receivedRTP(_ datagram: UnsafeRawBufferPointer, _ call: SIPLoadCall, at: Int64) {
        guard at > 0, let rtp = try? RTPPacket(parsing: datagram),
              let arrival = call.arrivals.arrived(sequence: rtp.header.sequenceNumber, timestamp: rtp.header.timestamp, at: at), measuring else { return }
        receivedMeasuring += 1
        missingMeasuring += arrival.missing
        if arrival.interval > Self.gapNanoseconds { gapsMeasuring += 1 }
        if arrival.interval > RTPArrivalTiming.resyncNanoseconds { stallsMeasuring += 1 }
        longestInterval = max(longestInterval, arrival.interval)
        if datagram[rtp.payload].contains(where: { $0 != 0xFF }) { soundMeasuring += 1 }
    }

    // MARK: Failing

    private func fail(_ call: SIPLoadCall, _ why: String) {
        if case .failed = call.phase { return }
        if call.phase == .inviting { inviting -= 1 }
        call.phase = .failed(why)
        failures[why, default: 0] += 1
    }
}
