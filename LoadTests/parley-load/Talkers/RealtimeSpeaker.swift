import CLinux
import Codec
import JSON
import Loop
import Server
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One Realtime session that speaks like a microphone: pcm16 at 24 kHz in 20 ms appends at
/// real-time pace, while a thread of its own reads the server's events and stamps each with when it
/// arrived. A blocking socket and two threads rather than the load pool: `turn-taking` runs one
/// session at a time and measures milliseconds, so the stamps must not wait for a poll loop.
final class RealtimeSpeaker: @unchecked Sendable {
    /// A server event as it arrived (monotonic nanoseconds). Audio deltas keep only their type and
    /// how much audio they carry: their base64 is not needed, and a long reply has hundreds.
    struct Received {
        let type: String
        let event: JSON?
        let at: UInt64
        /// For an audio delta: its length in ms, as pcm16 at 24 kHz (the session's output format).
        var audioMs = 0.0
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static let samplesPerChunk = 480

    /// Set, the session's input is a phone line's (`audio/pcmu`): each chunk of 24 kHz samples is
    /// taken down to 8 kHz (the resampler band-limits it, as a phone's codec does) and µ-law
    /// encoded. Its state runs across chunks, so a stream is one continuous line.
    var phoneLine: Resampler?

    private let fd: Int32
    private let events = Mutex<[Received]>([])
    /// Writes come from the streaming thread and (pongs) from the reader: one frame at a time.
    private let writing = Mutex(())
    private var reader: pthread_t?

    /// Connects to `target` at `path` (ws:// only) and completes the upgrade; events are read from then on.
    init(_ target: LoadTarget, path: String, timeoutSeconds: Int = 30) throws {
        guard target.tls == nil else { throw Failure(description: "turn-taking speaks ws:// only (its servers are on this machine)") }
        // From here every property is set, so a throw runs deinit, which closes the socket.
        fd = try Sys.streamSocket(family: target.address.family, .blocking)
        _ = try Sys.connect(fd, to: target.address)
        // Small appends must leave at once: their send time is what latencies are measured from.
        Sys.setNoDelay(fd)
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var random = FastRandom()
        let handshake = UpgradeHandshake(random: &random)
        var inbound: [UInt8] = []
        try write(handshake.request(for: target, path: path))
        answer: while true {
            var chunk = [UInt8](repeating: 0, count: 4096)
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { throw Failure(description: "\(target): the connection ended during the upgrade") }
            inbound += chunk[0..<n]
            switch inbound.withUnsafeBytes({ handshake.answer($0) }) {
            case .needMore: continue
            case .refused(let reason): throw Failure(description: "\(target)\(path): upgrade refused, \(reason)")
            case .upgraded(let length):
                inbound.removeFirst(length)
                break answer
            }
        }
        let leftover = inbound
        reader = try Thread.spawn(name: "speaker-events") { [self] in readEvents(leftover) }
    }

    deinit { Sys.close(fd) }

    func send(_ text: String) throws {
        try write(WebSocketClientFrame.encoded(opcode: ClientFrame.text, payload: Array(text.utf8)))
    }

    /// Streams `samples` in 20 ms appends at real-time pace, paced against the start so that a late
    /// wake-up does not add up. Returns when the chunk holding each sample index in `marks` went
    /// out. Before each chunk, `stop(offset, sent)` may end the stream early (the event awaited came).
    func stream(_ samples: [Int16], marking marks: [Int] = [], stop: (Int, [Int: UInt64]) -> Bool = { _, _ in false }) throws -> [Int: UInt64] {
        var sent: [Int: UInt64] = [:]
        let start = MonotonicClock.nanoseconds()
        for (n, offset) in stride(from: 0, to: samples.count, by: Self.samplesPerChunk).enumerated() {
            if stop(offset, sent) { break }
            let end = min(samples.count, offset + Self.samplesPerChunk)
            try send(#"{"type":"input_audio_buffer.append","audio":"\#(encoded(Array(samples[offset..<end])))"}"#)
            let now = MonotonicClock.nanoseconds()
            for mark in marks where mark >= offset && mark < end { sent[mark] = now }
            let due = start + UInt64(n + 1) * 20_000_000
            let after = MonotonicClock.nanoseconds()
            if due > after { usleep(UInt32((due - after) / 1_000)) }
        }
        return sent
    }

    /// Sends `samples` at once, in 100 ms appends: audio that stands for time already past (the
    /// quiet before a reply, from which the detector learns the floor; its clock counts samples).
    func append(_ samples: [Int16]) throws {
        for offset in stride(from: 0, to: samples.count, by: 2_400) {
            let chunk = Array(samples[offset..<min(samples.count, offset + 2_400)])
            try send(#"{"type":"input_audio_buffer.append","audio":"\#(encoded(chunk))"}"#)
        }
    }

    /// 24 kHz samples as the session's input format takes them, in base64.
    private func encoded(_ samples: [Int16]) -> String {
        guard let phoneLine else { return Base64.encode(PCM.littleEndianBytes(samples)) }
        return Base64.encode(G711.encode(phoneLine.process(samples), .muLaw))
    }

    /// Everything received so far.
    var received: [Received] { events.withLock { $0 } }

    /// How many events were received so far: where the next turn's begin, for `received(from:)`.
    var receivedCount: Int { events.withLock { $0.count } }

    /// The events received from the `index`th on: a long session's turn copies only its own.
    func received(from index: Int) -> [Received] { events.withLock { Array($0[min(index, $0.count)...]) } }

    /// The first event of `type` received, waiting up to `seconds` for it.
    func await(_ type: String, seconds: Double) -> Received? {
        let deadline = MonotonicClock.nanoseconds() + MonotonicClock.nanoseconds(seconds)
        while true {
            if let found = events.withLock({ $0.first { $0.type == type } }) { return found }
            if MonotonicClock.nanoseconds() >= deadline { return nil }
            usleep(2_000)
        }
    }

    /// Shuts the connection and waits for the reader; returns everything received.
    func finish() -> [Received] {
        shutdown(fd, Int32(SHUT_RDWR))
        if let reader { Thread.join(reader) }
        reader = nil
        return received
    }

    private func write(_ bytes: [UInt8]) throws {
        // A server that reset must give EPIPE here, not kill the process.
        let flags = Int32(MSG_NOSIGNAL)
        try writing.withLock { _ in
            var offset = 0
            while offset < bytes.count {
                let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, flags) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { throw Failure(description: "send: \(SystemError.reason(errno))") }
                offset += n
            }
        }
    }

    /// The reader thread: frames until the connection ends, each text message parsed and stamped.
    private func readEvents(_ leftover: [UInt8]) {
        var inbound = leftover
        var message: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            while case .frame(let frame) = inbound.withUnsafeBytes({ ServerFrame.parse($0, maxPayload: 16 << 20) }) {
                let payload = Array(inbound[frame.payloadOffset..<frame.totalLength])
                inbound.removeFirst(frame.totalLength)
                switch frame.opcode {
                case ClientFrame.ping: try? write(WebSocketClientFrame.encoded(opcode: ClientFrame.pong, payload: payload))
                case ClientFrame.close: return
                case ClientFrame.text, 0x0:
                    message += payload
                    if frame.final {
                        record(message)
                        message.removeAll()
                    }
                default: break
                }
            }
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return }
            inbound += chunk[0..<n]
        }
    }

    private func record(_ message: [UInt8]) {
        let at = MonotonicClock.nanoseconds()
        guard let event = try? JSON(parsing: String(decoding: message, as: UTF8.self)), let type = event["type"]?.string else { return }
        guard type.hasSuffix("audio.delta") else {
            events.withLock { $0.append(Received(type: type, event: event, at: at)) }
            return
        }
        // Base64: 4 characters for 3 bytes, less the padding; 48 bytes of pcm16 a millisecond at 24 kHz.
        let text = event["delta"]?.string ?? ""
        let bytes = text.utf8.count / 4 * 3 - text.utf8.reversed().prefix { $0 == UInt8(ascii: "=") }.count
        events.withLock { $0.append(Received(type: type, event: nil, at: at, audioMs: Double(bytes) / 48)) }
    }
}
