import JSON
import Loop
import Media
import TLS
import WebRTC
#if canImport(Glibc)
import Glibc
#endif

/// Many WebRTC calls from one thread: each posts its offer (a short TCP connection), checks ICE,
/// runs DTLS as the client, opens SCTP and the `oai-events` channel, then streams: the talking
/// callers' 20 ms Opus packets as SRTP in turns, consent checks every 2.5 s from every caller, and
/// the reply audio received and counted. One epoll instance (`Poller`) and a 20 ms tick drive it.
final class WebRTCLoadRun {
    struct Settings {
        let target: LoadTarget
        let calls: Int
        let talking: Int
        /// The recording as 20 ms Opus packets.
        let packets: [[UInt8]]
        let pause: Double
        let replyTimeout: Double
        let openRate: Double
        let offersInFlight: Int
        let bearer: String?
        /// Whether each caller asks for a reply (`response.create`) once its channel opens: what
        /// times offer → first reply audio for every call, talking or not.
        let greet: Bool
    }

    /// Why calls failed, by message, and the events received by type.
    private(set) var failures: [String: Int] = [:]
    private(set) var events: [String: Int] = [:]
    /// How late the 20 ms tick ran, while measuring: the client's own health.
    private(set) var tickLateness = LatencyRecorder()
    private(set) var audioSentMeasuring = 0
    private(set) var audioReceivedMeasuring = 0
    private(set) var ticksMeasuring = 0

    static let frameNanoseconds: UInt64 = 20_000_000
    /// RFC 7675 section 5.1 asks for consent checks every 5 s (jittered); the brief and browsers
    /// go faster, and Parley expires a call after 30 s without one.
    static let consentNanoseconds: UInt64 = 2_500_000_000

    let settings: Settings
    let calls: [WebRTCLoadCall]
    private let poller: Poller
    private let dtlsContext: DTLSContext
    private let fingerprint: DTLSFingerprint
    private var nextToOpen = 0
    private var offering = 0
    private var opened = 0
    private let startedAt: UInt64
    private var nextTick: UInt64
    private var tickCount: UInt64 = 0
    private var measuring = false
    private var speaking = true
    private let receiveBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 16)
    private var sendBuffer: [UInt8] = []

    init(_ settings: Settings) throws {
        self.settings = settings
        poller = try Poller()
        // One certificate for every caller (a browser makes one per connection; the handshake's
        // cost is the same, and the key is made once).
        let certificate = try DTLSCertificate(commonName: "parley-load")
        dtlsContext = try DTLSContext(certificate: certificate, role: .client)
        fingerprint = certificate.fingerprint
        calls = (0..<settings.calls).map(WebRTCLoadCall.init)
        startedAt = MonotonicClock.nanoseconds()
        nextTick = startedAt + Self.frameNanoseconds
        sendBuffer.reserveCapacity(1500)
    }

    deinit {
        receiveBuffer.deallocate()
    }

    var openCalls: Int { calls.count(where: \.isOpen) }
    var settled: Bool { nextToOpen == calls.count && calls.allSatisfy(\.isSettled) }

    // MARK: Phases

    /// Opens the calls at `openRate` a second, at most `offersInFlight` offers at once, until every
    /// call is open or failed, or the deadline.
    func open(deadline: UInt64, progress: Progress) {
        while MonotonicClock.nanoseconds() < deadline && !settled {
            step()
            progress.update("opening  \(Format.grouped(openCalls))/\(Format.grouped(calls.count)) calls up, \(Format.grouped(failures.values.reduce(0, +))) failed")
        }
    }

    /// Streams until `deadline` (or `until` says stop).
    func stream(until deadline: UInt64, measuring: Bool, progress: Progress, until done: () -> Bool = { false }) {
        self.measuring = measuring
        while MonotonicClock.nanoseconds() < deadline && !done() {
            step()
            progress.update("\(measuring ? "measuring" : "streaming")  \(Format.grouped(openCalls)) calls up, \(Format.grouped(audioSentMeasuring)) packets out, \(Format.grouped(audioReceivedMeasuring)) in")
        }
        self.measuring = false
    }

    /// Talking callers stop after this (their turns still end), so the server can catch up.
    func stopSpeaking() { speaking = false }

    /// DTLS close_notify from every open call (the server ends each as hung up), then the sockets.
    func hangUp() {
        for call in calls {
            if let dtls = call.dtls { send(dtls.close(), call) }
            close(call)
            if call.isOpen { call.phase = .hungUp }
        }
    }

    // MARK: The loop

    private func step() {
        let now = MonotonicClock.nanoseconds()
        openMore(now: now)
        let wait = nextTick > now ? Int32((nextTick - now) / 1_000_000) : 0
        poller.wait(timeoutMilliseconds: max(0, min(wait, 20))) { token, events in
            let index = Int(token >> 1)
            guard index < calls.count else { return }
            if token & 1 == 0 { offerReady(calls[index], events: events) } else { datagramsReady(calls[index]) }
        }
        let after = MonotonicClock.nanoseconds()
        if after >= nextTick { tick(now: after) }
    }

    private func openMore(now: UInt64) {
        let due = min(calls.count, Int(Double(now - startedAt) / 1e9 * settings.openRate) + 1)
        while nextToOpen < due && offering < settings.offersInFlight {
            let call = calls[nextToOpen]
            nextToOpen += 1
            startOffer(call, now: now)
        }
    }

    // MARK: The offer

    private func startOffer(_ call: WebRTCLoadCall, now: UInt64) {
        call.phase = .offering
        call.offeredAt = now
        let sdp = WebRTCLoadOffer.sdp(ufrag: call.local.ufrag, password: call.local.password, fingerprint: fingerprint,
                                      ssrc: call.ssrc, sessionID: UInt64(call.index) + 1)
        call.request = OfferExchange.request(path: "/v1/realtime/calls", host: settings.target.hostHeader, offer: sdp, bearer: settings.bearer)
        switch ClientSocket.connect(to: settings.target.address, from: nil) {
        case .failure(let failure): return fail(call, "connect: \(failure.name)")
        case .success(let fd): call.tcp = fd
        }
        do { try poller.add(call.tcp, events: Poller.writable | Poller.readable, token: UInt64(call.index) << 1) } catch {
            return fail(call, "epoll: \(error)")
        }
        offering += 1
    }

    private func offerReady(_ call: WebRTCLoadCall, events: UInt32) {
        guard call.phase == .offering, call.tcp >= 0 else { return }
        if call.requestSent < call.request.count {
            if call.requestSent == 0, ClientSocket.pendingError(call.tcp) != 0 { return fail(call, "connect refused") }
            switch call.request[call.requestSent...].withUnsafeBytes({ ClientSocket.write(call.tcp, $0) }) {
            case .transferred(let n): call.requestSent += n
            case .wouldBlock: return
            default: return fail(call, "the offer could not be sent")
            }
            if call.requestSent == call.request.count { poller.modify(call.tcp, events: Poller.readable, token: UInt64(call.index) << 1) }
            return
        }
        var closed = false
        reading: while true {
            switch ClientSocket.read(call.tcp, into: receiveBuffer) {
            case .transferred(let n): call.response += receiveBuffer[0..<n]
            case .wouldBlock: break reading
            case .endOfFile: closed = true; break reading
            default: closed = true; break reading
            }
        }
        let response: OfferExchange.Response
        do throws(OfferExchange.Invalid) {
            guard let complete = try OfferExchange.response(call.response, closed: closed) else { return }
            response = complete
        } catch { return fail(call, "offer: \(error)") }
        closeOffer(call)
        guard response.status == 201 else {
            return fail(call, "offer answered \(response.status): \(String(decoding: response.body.prefix(80), as: UTF8.self))")
        }
        let answer: WebRTCLoadAnswer
        do throws(WebRTCLoadAnswer.Invalid) { answer = try WebRTCLoadAnswer(parsing: String(decoding: response.body, as: UTF8.self)) } catch {
            return fail(call, "\(error)")
        }
        let now = MonotonicClock.nanoseconds()
        call.answeredAt = now
        call.answer = answer
        guard let remote = SocketAddress.ip(answer.hostOctets, port: answer.port) else { return fail(call, "candidate \(answer.host)") }
        call.remote = remote
        do {
            call.udp = try Sys.datagramSocket(family: remote.family)
            try Sys.bindDatagram(call.udp, to: .ipv4(127, 0, 0, 1, port: 0))
            try poller.add(call.udp, events: Poller.readable, token: UInt64(call.index) << 1 | 1)
        } catch { return fail(call, "udp: \(error)") }
        call.phase = .checking
        sendCheck(call, now: now)
    }

    private func closeOffer(_ call: WebRTCLoadCall) {
        guard call.tcp >= 0 else { return }
        ClientSocket.close(call.tcp)  // close(2) takes it out of epoll too
        call.tcp = -1
        call.request = []
        call.response = []
        offering -= 1
    }

    // MARK: Datagrams

    private func datagramsReady(_ call: WebRTCLoadCall) {
        var from = SocketAddress()
        while call.udp >= 0 {
            let count: Int?
            do { count = try Sys.receiveDatagram(call.udp, into: receiveBuffer, from: &from) } catch { return fail(call, "recvfrom: \(error)") }
            guard let count, count > 0 else { return }
            let datagram = UnsafeMutableRawBufferPointer(rebasing: receiveBuffer[0..<count])
            let now = MonotonicClock.nanoseconds()
            switch PacketKind.classify(datagram[0]) {
            case .stun: receivedSTUN(UnsafeRawBufferPointer(datagram), call, now: now)
            case .dtls: receivedDTLS(UnsafeRawBufferPointer(datagram), call, now: now)
            case .rtp: receivedMedia(datagram, call, now: now)
            case .drop: continue
            }
        }
    }

    private func receivedSTUN(_ datagram: UnsafeRawBufferPointer, _ call: WebRTCLoadCall, now: UInt64) {
        guard call.isCheckAnswered(datagram), call.phase == .checking, let answer = call.answer else { return }
        call.iceAt = now
        call.phase = .handshaking
        do {
            let dtls = try DTLSEndpoint(context: dtlsContext, remoteFingerprint: answer.fingerprint)
            call.dtls = dtls
            send(try dtls.start(), call)
        } catch { fail(call, "DTLS: \(error)") }
    }

    private func receivedDTLS(_ datagram: UnsafeRawBufferPointer, _ call: WebRTCLoadCall, now: UInt64) {
        guard let dtls = call.dtls else { return }
        let output: DTLSEndpoint.Output
        do throws(DTLSError) { output = try dtls.receive(datagram) } catch { return fail(call, "DTLS: \(error)") }
        send(output.datagrams, call)
        if let keys = output.established {
            call.dtlsAt = now
            do throws(SRTPError) { call.srtp = try SRTPContext(keys: keys, role: .client) } catch { return fail(call, "SRTP: \(error)") }
            call.phase = .connecting
            perform(call.channels.connect(now: now), call, now: now)
        }
        for packet in output.applicationData { perform(call.channels.receive(packet, now: now), call, now: now) }
        if output.peerClosed, call.isOpen { fail(call, "the server closed DTLS") }
    }

    private func receivedMedia(_ datagram: UnsafeMutableRawBufferPointer, _ call: WebRTCLoadCall, now: UInt64) {
        guard let srtp = call.srtp else { return }
        if RTPPacket.isRTCP(UnsafeRawBufferPointer(datagram)) {
            _ = try? srtp.unprotectRTCP(datagram)
            return
        }
        guard (try? srtp.unprotect(rtp: datagram)) != nil else { return }
        if call.firstAudioAt == 0 { call.firstAudioAt = now }
        call.audioReceived += 1
        if measuring { audioReceivedMeasuring += 1 }
    }

    // MARK: The data channel

    private func perform(_ actions: [DataChannels.Action], _ call: WebRTCLoadCall, now: UInt64) {
        for action in actions {
            switch action {
            case .send(let packet):
                guard let dtls = call.dtls else { return }
                do throws(DTLSError) { send(try dtls.write(packet), call) } catch { return fail(call, "DTLS write: \(error)") }
            case .connected:
                do throws(DataChannelError) {
                    let (stream, more) = try call.channels.open(label: "oai-events", now: now)
                    call.eventsStream = stream
                    perform(more, call, now: now)
                } catch { return fail(call, "open oai-events: \(error)") }
            case .opened(let stream, _, _):
                guard stream == call.eventsStream, call.phase == .connecting else { continue }
                call.channelAt = now
                call.phase = .open
                opened += 1
                if call.index < settings.talking {
                    // Spread over a second so that the talkers' packets do not all leave in one tick.
                    let start = now + UInt64(call.index % 50) * Self.frameNanoseconds
                    call.turns = WebRTCTalkTurns(frames: settings.packets.count, pause: MonotonicClock.nanoseconds(settings.pause),
                                                 replyTimeout: MonotonicClock.nanoseconds(settings.replyTimeout), startAt: start,
                                                 greeted: settings.greet)
                }
                if settings.greet { sendEvent(#"{"type":"response.create"}"#, call, now: now) }
            case .message(let stream, let message):
                guard stream == call.eventsStream, case .text(let text) = message else { continue }
                received(event: text, call, now: now)
            case .closed(let stream):
                if stream == call.eventsStream { fail(call, "the server closed oai-events") }
            case .ended(let why):
                return fail(call, "SCTP ended: \(why)")
            }
        }
    }

    private func sendEvent(_ text: String, _ call: WebRTCLoadCall, now: UInt64) {
        guard let stream = call.eventsStream else { return }
        do throws(SCTPSendError) { perform(try call.channels.send(text: text, on: stream, now: now), call, now: now) } catch {
            fail(call, "send: \(error)")
        }
    }

    private func received(event text: String, _ call: WebRTCLoadCall, now: UInt64) {
        guard let event = try? JSON(parsing: text), let type = event["type"]?.string else { return }
        // Errors by their code, so that the summary says which.
        events[type == "error" ? "error \(event["error"]?["code"]?.string ?? event["error"]?["type"]?.string ?? "?")" : type, default: 0] += 1
        switch type {
        case "response.created": call.replyHasAudio = false
        case "response.output_audio_transcript.delta", "response.output_audio.done": call.replyHasAudio = true
        case "output_audio_buffer.started":
            call.replyHasAudio = true
            call.turns?.replyStarted(now: now)
        case "output_audio_buffer.stopped", "output_audio_buffer.cleared": call.turns?.replyEnded(now: now)
        // A reply in text alone (a server without a synthesizer) ends with its response.
        case "response.done" where !call.replyHasAudio: call.turns?.replyEnded(now: now)
        default: break
        }
    }

    // MARK: The tick

    /// Every 20 ms: each talking caller's frame, consent checks due, and the DTLS and SCTP timers.
    private func tick(now: UInt64) {
        if measuring {
            tickLateness.record(now - nextTick)
            ticksMeasuring += 1
        }
        tickCount += 1
        for call in calls where call.udp >= 0 {
            if call.phase == .checking || call.isOpen, now >= call.nextConsent { sendCheck(call, now: now) }
            if call.phase == .handshaking, let dtls = call.dtls, let deadline = dtls.retransmissionDeadline(now: now), deadline <= now {
                do throws(DTLSError) { send(try dtls.handleTimeout(), call) } catch { fail(call, "DTLS timed out: \(error)"); continue }
            }
            if let deadline = call.channels.nextDeadline, deadline <= now { perform(call.channels.tick(now: now), call, now: now) }
            guard call.isOpen, speaking, var turns = call.turns else { continue }
            let frame = turns.tick(now: now)
            call.turns = turns
            guard let frame, call.audioPacket(settings.packets[frame], tick: tickCount, marker: frame == 0, into: &sendBuffer) else { continue }
            sendBuffer.withUnsafeBytes { sendDatagram($0, call) }
            if measuring { audioSentMeasuring += 1 }
        }
        nextTick += Self.frameNanoseconds
        // Far behind: start again from now rather than send a burst.
        if nextTick <= now { nextTick = now + Self.frameNanoseconds }
    }

    private func sendCheck(_ call: WebRTCLoadCall, now: UInt64) {
        guard let request = call.bindingRequest() else { return }
        // Until ICE succeeds, again every 100 ms (RFC 8445 section 14.3's Ta is far shorter; one
        // lost check must not cost a second); then consent every 2.5 s.
        call.nextConsent = now + (call.phase == .checking ? 100_000_000 : Self.consentNanoseconds)
        request.withUnsafeBytes { sendDatagram($0, call) }
    }

    private func send(_ datagrams: [[UInt8]], _ call: WebRTCLoadCall) {
        for datagram in datagrams { datagram.withUnsafeBytes { sendDatagram($0, call) } }
    }

    private func sendDatagram(_ bytes: UnsafeRawBufferPointer, _ call: WebRTCLoadCall) {
        guard call.udp >= 0, let remote = call.remote else { return }
        _ = try? Sys.sendDatagram(call.udp, bytes, to: remote)
    }

    // MARK: Failing

    private func fail(_ call: WebRTCLoadCall, _ why: String) {
        guard !call.isSettled || call.isOpen else { return }
        call.phase = .failed(why)
        failures[why, default: 0] += 1
        close(call)
    }

    private func close(_ call: WebRTCLoadCall) {
        closeOffer(call)
        if call.udp >= 0 {
            ClientSocket.close(call.udp)
            call.udp = -1
        }
    }
}
