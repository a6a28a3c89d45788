import Codec
import JSON
import Server
import Loop
#if canImport(Glibc)
import Glibc
#endif

/// One `parley talk` conversation: the socket, what is printed, and the reply's audio.
struct TalkSession {
    struct TurnFailure: Error, CustomStringConvertible {
        let description: String
    }

    let json: Bool
    let timeout: Double
    /// Spoken replies are kept (for --save-reply); without it the session asks for text replies.
    let keepAudio: Bool
    private var socket: TalkSocket?
    private var replyAudio: [[UInt8]] = []
    private(set) var failedTurns = 0
    /// The turn's reply has ended (it may end while a recording is still being sent); true between turns.
    private var replied = true
    /// Where the server is, for reconnecting.
    private var address: (host: String, port: Int, path: String) = ("", 0, "")
    /// The session's token and last seq, to get it back when the socket drops.
    private var resume = TalkResume()
    private var lastAck: UInt64 = 0

    init(json: Bool, timeout: Double, keepAudio: Bool) {
        self.json = json
        self.timeout = timeout
        self.keepAudio = keepAudio
    }

    mutating func open(host: String, port: Int, path: String) throws(TalkSocket.Failure) {
        address = (host, port, path)
        try openNew()
    }

    /// A new session (resumable: the server numbers its events and gives a token), set up for the
    /// replies this command wants.
    private mutating func openNew() throws(TalkSocket.Failure) {
        resume.forget()
        let socket = try TalkSocket(host: address.host, port: address.port, path: resume.target(address.path))
        self.socket = socket
        _ = try wait(for: "session.created")
        let modalities = keepAudio ? "audio" : "text"
        try socket.send(text: #"{"type":"session.update","session":{"type":"realtime","output_modalities":["\#(modalities)"]}}"#)
        _ = try wait(for: "session.updated")
    }

    func close() { socket?.close() }

    /// One typed turn, its reply printed as it streams.
    mutating func say(_ text: String) throws(TalkSocket.Failure) {
        let item = JSON.object([("type", .string("conversation.item.create")), ("item", .object([
            ("type", .string("message")), ("role", .string("user")),
            ("content", .array([.object([("type", .string("input_text")), ("text", .string(text))])])),
        ]))])
        try catchUp()
        replied = false
        try send(.text(item.description))
        // (Unless the session was lost with the item: the new one has nothing to answer.)
        if !replied { try send(.text(#"{"type":"response.create"}"#)) }
        try awaitReply()
    }

    /// One spoken turn: the packets at real-time pace, then the reply.
    mutating func speak(_ packets: [[UInt8]]) throws(TalkSocket.Failure) {
        try catchUp()
        replied = false
        var next = MonotonicClock.nanoseconds()
        // A session lost mid-recording ends the turn: the rest would be half a sentence to a new one.
        for packet in packets where !replied {
            try send(.binary(packet))
            next += 20_000_000
            // Whatever arrives meanwhile is shown as it comes.
            while let message = try receive(until: next) { handle(message) }
        }
        try awaitReply()
    }

    /// Until `response.done` (or the time-out).
    private mutating func awaitReply() throws(TalkSocket.Failure) {
        let deadline = MonotonicClock.nanoseconds() + UInt64(timeout * 1e9)
        while !replied {
            guard let message = try receive(until: deadline) else {
                if replied { return }  // the session was lost, and the turn with it
                throw .timedOut(timeout)
            }
            handle(message)
        }
    }

    /// What came while the prompt waited for a line (a close among it, from a server going away, is
    /// best met before the turn is sent into it).
    private mutating func catchUp() throws(TalkSocket.Failure) {
        while let message = try receive(until: MonotonicClock.nanoseconds() + 2_000_000) { handle(message) }
    }

    /// The next message, the session resumed on a new socket if the old one dropped; nil when the
    /// deadline passed, or the session was lost (a new one is open). Acknowledges what it has seen
    /// about once a second, so the server can let its replay log go.
    private mutating func receive(until deadline: UInt64) throws(TalkSocket.Failure) -> TalkSocket.Message? {
        while true {
            guard let socket else { throw .connect("not connected") }
            let now = MonotonicClock.nanoseconds()
            do {
                if now >= lastAck + 1_000_000_000, let ack = resume.ack() {
                    try socket.send(text: ack)
                    lastAck = now
                }
                // In slices of at most a second, so that acks go out during a long reply.
                guard let message = try socket.receive(until: min(deadline, now + 1_000_000_000)) else {
                    if MonotonicClock.nanoseconds() >= deadline { return nil }
                    continue
                }
                if case .text(let text) = message, let event = try? JSON(parsing: text) { _ = resume.note(event) }
                return message
            } catch {
                guard try reconnect(after: error) else { return nil }
            }
        }
    }

    private enum Outgoing {
        case text(String)
        case binary([UInt8])
    }

    /// Sends on the socket; if it dropped, on the resumed one (unless the session was lost with it).
    private mutating func send(_ message: Outgoing) throws(TalkSocket.Failure) {
        while true {
            guard let socket else { throw .connect("not connected") }
            do {
                switch message {
                case .text(let text): try socket.send(text: text)
                case .binary(let packet): try socket.send(binary: packet)
                }
                return
            } catch {
                // Resumed: again, on the new socket; lost: the turn went with the session.
                guard try reconnect(after: error) else { return }
            }
        }
    }

    /// After the socket dropped: the same session on a new one (0.25 s, 0.5 s, 1 s, … up to 4 s
    /// apart, within the server's grace window), or, when that cannot be, a new session and the turn
    /// counted as failed. Rethrows what is not a drop; true when the session is back.
    @discardableResult
    private mutating func reconnect(after failure: TalkSocket.Failure) throws(TalkSocket.Failure) -> Bool {
        guard case .closed(let code, _) = failure, TalkResume.parks(closeCode: code), resume.token != nil else { throw failure }
        socket = nil
        FileHandleStandardError.write("parley talk: \(failure.description); reconnecting\n")
        let dropped = MonotonicClock.nanoseconds()
        var attempt = 0, why = "no reconnect within \(Int(resume.graceSeconds)) s"
        attempts: while let wait = resume.delay(attempt: attempt, elapsed: Double(MonotonicClock.nanoseconds() - dropped) / 1e9) {
            attempt += 1
            usleep(UInt32(wait * 1e6))
            do throws(TalkSocket.Failure) {
                let next = try TalkSocket(host: address.host, port: address.port, path: resume.target(address.path))
                // The first event says whether the session is back.
                let deadline = MonotonicClock.nanoseconds() + 10_000_000_000
                while true {
                    guard let message = try next.receive(until: deadline) else { throw TalkSocket.Failure.timedOut(10) }
                    guard case .text(let text) = message, let event = try? JSON(parsing: text) else { continue }
                    if json { print(text); fflush(nil) }
                    switch resume.note(event) {
                    case .resumed(let replayed):
                        socket = next
                        lastAck = 0
                        FileHandleStandardError.write("parley talk: reconnected (\(replayed) events replayed)\n")
                        return true
                    case .lost(let reason):
                        why = reason
                        break attempts
                    case .none:
                        continue
                    }
                }
            } catch {
                switch error {
                // Not there yet (a new node starting, a balancer), or draining (503): again.
                case .connect, .closed, .timedOut: continue
                case .refused(let answer) where answer.contains(" 503"): continue
                // A 400 or 401 will not change.
                case .refused(let answer):
                    why = answer
                    break attempts
                }
            }
        }
        FileHandleStandardError.write("parley talk: session lost: \(why); starting a new session\n")
        try openNew()
        // The turn in progress went with the old session.
        if !replied {
            replied = true
            failedTurns += 1
        }
        return false
    }

    /// A reply ended: one that did not complete counts as a failed turn.
    private mutating func replyEnded(_ event: JSON) {
        replied = true
        let status = event["response"]?["status"]?.string ?? "?"
        guard status != "completed" else { return }
        failedTurns += 1
        if !json { FileHandleStandardError.write("parley talk: the reply ended \(status)\(Self.reason(event))\n") }
    }

    private static func reason(_ event: JSON) -> String {
        let details = event["response"]?["status_details"]
        if let message = details?["error"]?["message"]?.string { return ": \(message)" }
        if let reason = details?["reason"]?.string { return " (\(reason))" }
        return ""
    }

    private mutating func wait(for type: String) throws(TalkSocket.Failure) -> JSON {
        guard let socket else { throw .connect("not connected") }
        let deadline = MonotonicClock.nanoseconds() + UInt64(timeout * 1e9)
        while true {
            guard let message = try socket.receive(until: deadline) else { throw .timedOut(timeout) }
            if case .text(let text) = message, let event = try? JSON(parsing: text) {
                _ = resume.note(event)
                if json { print(text) }
                if event["type"]?.string == type { return event }
                if event["type"]?.string == "error" { throw .refused(event["error"]?["message"]?.string ?? "error") }
            }
        }
    }

    /// Shows one message; the event, if it was one.
    @discardableResult
    private mutating func handle(_ message: TalkSocket.Message) -> JSON? {
        switch message {
        case .binary(let packet):
            if keepAudio { replyAudio.append(packet) }
            return nil
        case .text(let text):
            guard let event = try? JSON(parsing: text) else { return nil }
            if event["type"]?.string == "response.done" { replyEnded(event) }
            if json {
                print(text)
                fflush(nil)
                return event
            }
            show(event)
            return event
        }
    }

    private func show(_ event: JSON) {
        switch event["type"]?.string ?? "" {
        case "conversation.item.input_audio_transcription.completed":
            print("you: \(event["transcript"]?.string ?? "")")
        case "response.output_text.delta", "response.output_audio_transcript.delta":
            print(event["delta"]?.string ?? "", terminator: "")
        case "response.created":
            print("parley: ", terminator: "")
        case "response.done":
            print("")
        case "error":
            FileHandleStandardError.write("parley talk: server error: \(event["error"]?["message"]?.string ?? "?")\n")
        default:
            return
        }
        fflush(nil)
    }

    /// The spoken reply as a WAV file at 24 kHz, the rate the server encodes at.
    func saveReply(to path: String) throws(AudioFileError) {
        guard let decoder = try? OpusDecoder(format: AudioFormat(sampleRate: .hz24000, channels: .mono)) else { return }
        var pcm: [Int16] = []
        for packet in replyAudio { pcm += (try? decoder.decode(packet)) ?? [] }
        try WAVFile(sampleRate: 24_000, channels: 1, samples: pcm).write(path: path)
    }
}
