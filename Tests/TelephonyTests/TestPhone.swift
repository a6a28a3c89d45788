import Codec
import Glibc
import Loop
import TestSupport

/// A test's telephone for a `parley serve` on the test's clock: SIP and RTP over UDP on loopback,
/// PCMU, 20 ms packets; what the server sends is decoded into a play-out queue the test drains a
/// frame a tick, as a loudspeaker would. No echo canceller, no jitter buffer: the test decides
/// what its microphone sends.
final class TestPhone {
    private let sip: Int32, rtp: Int32
    private let rtpPort: Int
    private let server: SocketAddress
    private var media: SocketAddress?
    private let callID = "test-phone-\(getpid())-\(Int.random(in: 0..<1_000_000))@127.0.0.1"
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

    /// `method` (an INVITE with the phone's offer, or OPTIONS) out of any dialog, moving the
    /// clock until its final response comes: that response's status line and its headers.
    func ask(_ method: String, _ clock: any TestClock) throws -> (status: String, headers: [String]) {
        let sdp = "v=0\r\no=phone 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio \(rtpPort) RTP/AVP 0\r\na=rtpmap:0 PCMU/8000\r\n"
        try send(sip: request(method, cseq: 1, body: method == "INVITE" ? sdp : ""))
        for _ in 0..<500 {
            for message in try receivedSIP() where message.hasPrefix("SIP/2.0 ") && !message.hasPrefix("SIP/2.0 1") {
                let lines = message.split(separator: "\r\n").map(String.init)
                if method == "INVITE" { try send(sip: request("ACK", cseq: 1)) }
                return (lines[0], Array(lines.dropFirst()))
            }
            guard clock.advance(milliseconds: 20) else { throw Failed(description: "the server did not settle") }
        }
        throw Failed(description: "no final response to the \(method) within 10 s of the test's clock")
    }

    /// Whether a BYE came for the phone's call (answered 200, as a phone would).
    func receivedBye() throws -> Bool {
        for message in try receivedSIP() where message.hasPrefix("BYE ") {
            let lines = message.split(separator: "\r\n").map(String.init)
            let keep = lines.filter { line in ["via:", "from:", "to:", "call-id:", "cseq:"].contains { line.lowercased().hasPrefix($0) } }
            try send(sip: (["SIP/2.0 200 OK"] + keep + ["Content-Length: 0", "", ""]).joined(separator: "\r\n"))
            return true
        }
        return false
    }

    static func rms(_ samples: [Int16]) -> Double {
        (samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(1, samples.count))).squareRoot()
    }
}
