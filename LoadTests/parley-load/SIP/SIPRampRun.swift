import Loop
import SIP
#if canImport(Glibc)
import Glibc
#endif

/// Calls placed at a rate for a while, each as short as SIP allows: INVITE, its 200, the ACK and
/// at once a BYE, its 200. From a pool of UDP sockets (each a caller's address: the server's
/// loops are chosen by it), demultiplexed by Call-ID; an INVITE is resent on timer A until a
/// response comes, and given up after `answerTimeout`. One thread, one epoll instance.
final class SIPRampRun {
    /// One step's outcome.
    struct Step {
        let rate: Double
        var seconds = 0.0
        var offered = 0
        var accepted = 0
        /// Final responses other than 2xx, by status.
        var refused: [Int: Int] = [:]
        var unanswered = 0
        /// Calls whose BYE was answered: the whole call done.
        var completed = 0
        var resends = 0
        var setup = LatencyRecorder()
        /// The server's CPU over the step and its drain.
        var serverCPU: Double?

        var acceptedPerSecond: Double { seconds > 0 ? Double(accepted) / seconds : 0 }
        var acceptedShare: Double { offered > 0 ? Double(accepted) / Double(offered) : 0 }
    }

    private let serverPort: UInt16
    private let answerTimeout: UInt64
    private let poller: Poller
    private let server: SocketAddress
    private var sockets: [(fd: Int32, port: UInt16)] = []
    private let runTag: String
    private var live: [Int: SIPLoadCall] = [:]
    private var nextIndex = 0
    private var step = Step(rate: 0)
    private let receiveBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 16)

    init(serverPort: UInt16, sockets count: Int, answerTimeout: Double) throws {
        self.serverPort = serverPort
        self.answerTimeout = MonotonicClock.nanoseconds(answerTimeout)
        poller = try Poller()
        server = .ipv4(127, 0, 0, 1, port: serverPort)
        var random = FastRandom()
        runTag = String(random.next() >> 16, radix: 36)
        for i in 0..<count {
            sockets.append(try SIPLoadRun.socket(timestamped: false))
            try poller.add(sockets[i].fd, events: Poller.readable, token: UInt64(i))
        }
    }

    deinit {
        receiveBuffer.deallocate()
        for socket in sockets { Sys.close(socket.fd) }
    }

    /// INVITEs at `rate` a second for `seconds`, then until every call has ended or been given up
    /// (at most `answerTimeout` and a BYE's wait more).
    func run(rate: Double, seconds: Double, serverPid: Int32?, progress: Progress) -> Step {
        step = Step(rate: rate)
        let cpuBefore = serverPid.flatMap { ProcessFigures(pid: $0).cpuSeconds }
        let start = MonotonicClock.nanoseconds()
        let end = start + MonotonicClock.nanoseconds(seconds)
        let total = Int((rate * seconds).rounded())
        var lastTimers = start
        while true {
            let now = MonotonicClock.nanoseconds()
            if now < end {
                let due = min(total, Int(Double(now - start) / 1e9 * rate) + 1)
                while step.offered < due { place(now: now) }
            } else if live.isEmpty || now > end + answerTimeout + 5_000_000_000 {
                break
            }
            poller.wait(timeoutMilliseconds: 1) { token, _ in
                if Int(token) < sockets.count { read(sockets[Int(token)].fd) }
            }
            if now - lastTimers >= 20_000_000 {
                lastTimers = now
                timers(now: MonotonicClock.nanoseconds())
            }
            progress.update("ramp \(Format.fixed(rate, 0))/s  \(Format.grouped(step.offered)) INVITEs, \(Format.grouped(step.accepted)) accepted, \(Format.grouped(step.refused.values.reduce(0, +))) refused, \(Format.grouped(live.count)) under way")
        }
        // What is still under way is given up.
        for call in live.values where call.answeredAt == 0 { step.unanswered += 1 }
        live.removeAll()
        step.seconds = seconds
        if let a = cpuBefore, let b = serverPid.flatMap({ ProcessFigures(pid: $0).cpuSeconds }) { step.serverCPU = b - a }
        return step
    }

    private func place(now: UInt64) {
        let index = nextIndex
        nextIndex += 1
        let socket = sockets[index % sockets.count]
        let call = SIPLoadCall(index: index, talking: false, firstFrame: 0)
        call.signallingFD = socket.fd
        call.dial(serverPort: serverPort, run: runTag, signallingPort: socket.port, mediaPort: socket.port, now: now)
        live[index] = call
        step.offered += 1
        send(call.invite, call)
    }

    private func timers(now: UInt64) {
        for call in Array(live.values) {
            switch call.phase {
            case .inviting where now - call.invitedAt > answerTimeout:
                step.unanswered += 1
                live[call.index] = nil
            case .hangingUp where now - call.byeSentAt > answerTimeout:
                live[call.index] = nil
            case .inviting, .hangingUp:
                guard let again = call.resendDue(now: now) else { continue }
                send(again, call)
                if call.phase == .inviting { step.resends += 1 }
            default:
                live[call.index] = nil
            }
        }
    }

    private func send(_ bytes: [UInt8], _ call: SIPLoadCall) {
        bytes.withUnsafeBytes { _ = try? Sys.sendDatagram(call.signallingFD, $0, to: server) }
    }

    private func read(_ fd: Int32) {
        var from = SocketAddress()
        while true {
            let count: Int?
            do { count = try Sys.receiveDatagram(fd, into: receiveBuffer, from: &from) } catch { return }
            guard let count, count > 0 else { return }
            let datagram = UnsafeRawBufferPointer(rebasing: receiveBuffer[0..<count])
            // The server's RTP to the offer's port (this socket), in the moment between 200 and BYE.
            guard datagram[0] & 0xC0 != 0x80 else { continue }
            received(datagram, now: MonotonicClock.nanoseconds())
        }
    }

    private func received(_ datagram: UnsafeRawBufferPointer, now: UInt64) {
        guard let message = try? SIPMessageParser.parse(datagram: datagram), let callID = try? message.callID(),
              let index = SIPLoadMessages.index(ofCallID: callID), let call = live[index], let dialog = call.dialog else { return }
        if message.isRequest {
            // A BYE of the server's crossing ours.
            SIPLoadMessages.ok(to: message).withUnsafeBytes { _ = try? Sys.sendDatagram(call.signallingFD, $0, to: server) }
            return
        }
        guard let status = message.status, let cseq = try? message.cseq() else { return }
        switch cseq.method {
        case "INVITE":
            if status < 200 {
                call.provisional = true
            } else if status < 300 {
                if call.phase == .inviting {
                    call.answeredAt = now
                    step.accepted += 1
                    step.setup.record(now - call.invitedAt)
                    call.answer = message
                    call.ack = SIPLoadMessages.ack(dialog, response: message, inviteBranch: call.inviteBranch, ackBranch: "\(runTag)a\(index)")
                    send(call.ack, call)
                    if call.hangUp(run: runTag, now: now) { send(call.bye, call) }
                } else {
                    send(call.ack, call)
                }
            } else {
                send(SIPLoadMessages.ack(dialog, response: message, inviteBranch: call.inviteBranch, ackBranch: ""), call)
                if call.phase == .inviting {
                    step.refused[status, default: 0] += 1
                    live[index] = nil
                }
            }
        case "BYE" where status >= 200:
            if call.phase == .hangingUp { step.completed += 1 }
            call.phase = .ended
            live[index] = nil
        default:
            break
        }
    }
}
