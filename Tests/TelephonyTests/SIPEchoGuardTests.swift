import Codec
import Glibc
import Loop
import Testing
import TestSupport

/// A phone call's own echo over SIP (issue 52, item 4): a real `parley serve` answering a call
/// over UDP with its greeting, on a clock the test moves (`--test-clock`), and a phone with no echo
/// canceller that loops a share of what it hears back into its microphone: the greeting's RTP,
/// decoded as it arrives and played out 20 ms a tick, returns `delayMs` later at `leakDB` (-10 to
/// -30 dB, where phones and hybrids return it; ITU-T G.168 asks a line's echo loss of at least
/// 6 dB, and handsets give 20 to 40) over a room's pink noise. The greeting must play to its end
/// with no pause and no barge-in; a caller who speaks over it (espeak-ng, two voices) must still
/// pause it. The phone is the test itself: the relay sits where the phone's loudspeaker meets its
/// microphone, so the server hears exactly the line a phone without a canceller sends.
@Suite(.serialized) struct SIPEchoGuardTests {
    static let story = "Once upon a time, a small boat left the harbour at dawn. The sea was calm and grey. "
        + "Nobody on board knew how far the wind would carry them."

    static let lines: [(leakDB: Double, delayMs: Int, utterance: String?, voice: String)] = [
        (-10, 300, nil, ""), (-20, 150, nil, ""), (-30, 600, nil, ""),
        (-10, 300, "wait, actually I meant Paris", "en-us"), (-20, 150, "wait, actually I meant Paris", "en-gb+f3"),
    ]

    @Test(arguments: Self.lines)
    func aCallersOwnEchoNeverInterruptsTheGreeting(leakDB: Double, delayMs: Int, utterance: String?, voice: String) throws {
        let sip = try RedisServer.freePort()
        let server = try ServerProcess(arguments: "--sip-port \(sip) --sip-host 127.0.0.1 --sip-allow 127.0.0.1/32 --sip-greeting '\(Self.story)'",
                                       clocked: true)
        let clock = try #require(server.clock)
        let phone = try EchoingPhone(sipPort: sip)
        try phone.call(clock)

        let noise = try WAVFile.read(path: try SpeechVectors.pinkNoise(seconds: 40, rate: 8_000, volume: 0.01)).samples
        var user: [Int16] = []
        if let utterance {
            let wav = try WAVFile.read(path: try SpeechVectors.wav(utterance, voice: voice))
            user = try Resampler(from: wav.sampleRate, to: 8_000).process(wav.samples)
        }
        let leak = pow(10, leakDB / 20), delay = 8 * delayMs
        var heard: [Int16] = []         // what the loudspeaker played, 20 ms a tick
        var spokenFrames = 0, firstSpoken: Int?, lastSpoken = 0, userStart: Int?
        var tick = 1
        while tick < 1_500 {
            let played = phone.nextFrame()
            heard += played
            if Self.rms(played) > 300 {
                spokenFrames += 1
                if firstSpoken == nil { firstSpoken = tick }
                lastSpoken = tick
            }
            // A second into the greeting, the caller speaks.
            if utterance != nil, userStart == nil, let firstSpoken, tick - firstSpoken >= 50 { userStart = tick * 160 }
            let from = (tick - 1) * 160
            let microphone = (0..<160).map { i -> Int16 in
                let t = from + i
                let echo = t >= delay && t - delay < heard.count ? Double(heard[t - delay]) * leak : 0
                let said = userStart.map { t >= $0 && t - $0 < user.count ? Double(user[t - $0]) : 0 } ?? 0
                return Int16(clamping: Int(echo + said + Double(noise[t % noise.count])))
            }
            try phone.send(microphone)
            #expect(clock.advance(milliseconds: 20), "the server did not settle at tick \(tick)")
            // Done: two seconds after the greeting's last sound, and after the caller's speech.
            if firstSpoken != nil, tick - lastSpoken > 100, userStart.map({ tick * 160 - $0 > user.count + 16_000 }) ?? (utterance == nil) { break }
            tick += 1
        }
        try phone.hangUp()

        let paused = server.metric("parley_replies_paused_total") ?? 0
        let cut = server.metric("parley_interruptions_total") ?? 0
        let label = "\(utterance.map { "\"\($0)\" (\(voice))" } ?? "echo only") at \(Int(leakDB)) dB, \(delayMs) ms"
        print("SIP \(label): \(spokenFrames * 20) ms of greeting heard, \(Int(paused)) paused, \(Int(cut)) cut")
        #expect(firstSpoken != nil, "\(label): the greeting never came")
        if utterance == nil {
            #expect(paused == 0 && cut == 0, "\(label): the greeting's own echo paused it \(Int(paused)) times, cut it \(Int(cut))")
            // The whole greeting played: about 0.3 s a word at Piper's pace, less its pauses.
            #expect(spokenFrames * 20 > Self.story.split(separator: " ").count * 200, "\(label): \(spokenFrames * 20) ms")
            #expect((server.metric("parley_echo_guard_frames_total{result=\"held\"}") ?? 0) > 0, "\(label): the guard never held a frame")
        } else {
            #expect(paused + cut >= 1, "\(label): the caller's speech did not pause the greeting")
        }
    }

    static func rms(_ samples: [Int16]) -> Double {
        (samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(1, samples.count))).squareRoot()
    }
}

/// The test's telephone: SIP and RTP over UDP on loopback, PCMU, 20 ms packets; what the server
/// sends is decoded into a play-out queue the test drains a frame a tick, as a loudspeaker would.
final class EchoingPhone {
    private let sip: Int32, rtp: Int32
    private let rtpPort: Int
    private let server: SocketAddress
    private var media: SocketAddress?
    private let callID = "echo-\(getpid())-\(Int.random(in: 0..<1_000_000))@127.0.0.1"
    private var toTag = ""
    private var sequence: UInt16 = 1, timestamp: UInt32 = 0, marker = true
    private var queue: [Int16] = []
    private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 8)

    struct Failed: Error, CustomStringConvertible { let description: String }

    init(sipPort: Int) throws {
        server = .ipv4(127, 0, 0, 1, port: UInt16(sipPort))
        (sip, _) = try Sys.boundDatagramSocket(host: .ipv4(127, 0, 0, 1, port: 0), ports: [0])
        let local: SocketAddress
        (rtp, local) = try Sys.boundDatagramSocket(host: .ipv4(127, 0, 0, 1, port: 0), ports: [0])
        rtpPort = Int(local.port)
    }

    deinit {
        buffer.deallocate()
        Sys.close(sip)
        Sys.close(rtp)
    }

    private var sipPort: Int { (try? Sys.localAddress(sip)).map { Int($0.port) } ?? 0 }

    private func request(_ method: String, cseq: Int, body: String = "") -> String {
        "\(method) sip:parley@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:\(sipPort);branch=z9hG4bK-\(method.lowercased())-\(Int.random(in: 0..<1_000_000))\r\n"
            + "Max-Forwards: 70\r\nFrom: <sip:phone@127.0.0.1>;tag=phone\r\nTo: <sip:parley@127.0.0.1>\(toTag.isEmpty ? "" : ";tag=\(toTag)")\r\n"
            + "Call-ID: \(callID)\r\nCSeq: \(cseq) \(method)\r\nContact: <sip:phone@127.0.0.1:\(sipPort)>\r\n"
            + (body.isEmpty ? "" : "Content-Type: application/sdp\r\n") + "Content-Length: \(body.utf8.count)\r\n\r\n" + body
    }

    private func send(sip text: String) throws {
        _ = try Array(text.utf8).withUnsafeBytes { try Sys.sendDatagram(sip, $0, to: server) }
    }

    /// The SIP datagrams waiting, as text.
    private func receivedSIP() throws -> [String] {
        var from = SocketAddress.ipv4(0, 0, 0, 0, port: 0)
        var messages: [String] = []
        while let n = try Sys.receiveDatagram(sip, into: buffer, from: &from) {
            messages.append(String(decoding: buffer.prefix(n), as: UTF8.self))
        }
        return messages
    }

    /// INVITE with a PCMU offer, moving the clock until the 200 comes, then its ACK.
    func call(_ clock: any TestClock) throws {
        let sdp = "v=0\r\no=phone 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n"
            + "m=audio \(rtpPort) RTP/AVP 0 101\r\na=rtpmap:0 PCMU/8000\r\na=rtpmap:101 telephone-event/8000\r\na=ptime:20\r\na=sendrecv\r\n"
        try send(sip: request("INVITE", cseq: 1, body: sdp))
        for _ in 0..<500 {
            for message in try receivedSIP() where message.hasPrefix("SIP/2.0 200") && message.contains("INVITE") {
                let lines = message.split(separator: "\r\n").map(String.init)
                let to = lines.first { $0.lowercased().hasPrefix("to:") } ?? ""
                toTag = to.split(separator: "tag=", maxSplits: 1).dropFirst().first?.split(separator: ";").first.map(String.init) ?? ""
                let port = lines.first { $0.hasPrefix("m=audio ") }?.split(separator: " ").dropFirst().first.flatMap { Int($0) }
                guard let port, !toTag.isEmpty else { throw Failed(description: "an answer without a tag or an audio port: \(message)") }
                media = .ipv4(127, 0, 0, 1, port: UInt16(port))
                try send(sip: request("ACK", cseq: 1))
                return
            }
            guard clock.advance(milliseconds: 20) else { throw Failed(description: "the server did not settle while answering") }
        }
        throw Failed(description: "no 200 to the INVITE within 10 s of the test's clock")
    }

    /// The next 20 ms the loudspeaker plays: the server's audio as it came, silence when none waits.
    func nextFrame() -> [Int16] {
        var from = SocketAddress.ipv4(0, 0, 0, 0, port: 0)
        while let n = try? Sys.receiveDatagram(rtp, into: buffer, from: &from), n > 12 {
            let csrc = Int(buffer[0] & 0x0F) * 4
            guard buffer[1] & 0x7F == 0, n > 12 + csrc else { continue }
            queue += G711.decode(Array(buffer[(12 + csrc)..<n]), .muLaw)
        }
        let frame = Array(queue.prefix(160))
        queue.removeFirst(frame.count)
        return frame + [Int16](repeating: 0, count: 160 - frame.count)
    }

    /// One 20 ms RTP packet of the microphone.
    func send(_ samples: [Int16]) throws {
        guard let media else { return }
        var packet: [UInt8] = [0x80, marker ? 0x80 : 0x00, UInt8(sequence >> 8), UInt8(sequence & 0xFF)]
        packet += withUnsafeBytes(of: timestamp.bigEndian, Array.init) + [0x0E, 0xC0, 0x11, 0x5A]
        packet += G711.encode(samples, .muLaw)
        _ = try packet.withUnsafeBytes { try Sys.sendDatagram(rtp, $0, to: media) }
        marker = false
        sequence &+= 1
        timestamp &+= 160
    }

    func hangUp() throws {
        try send(sip: request("BYE", cseq: 2))
    }
}
