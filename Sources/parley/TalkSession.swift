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
    /// The turn's reply has ended (it may end while a recording is still being sent).
    private var replied = false

    init(json: Bool, timeout: Double, keepAudio: Bool) {
        self.json = json
        self.timeout = timeout
        self.keepAudio = keepAudio
    }

    mutating func open(host: String, port: Int, path: String) throws(TalkSocket.Failure) {
        let socket = try TalkSocket(host: host, port: port, path: path)
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
        replied = false
        try socket?.send(text: item.description)
        try socket?.send(text: #"{"type":"response.create"}"#)
        try awaitReply()
    }

    /// One spoken turn: the packets at real-time pace, then the reply.
    mutating func speak(_ packets: [[UInt8]]) throws(TalkSocket.Failure) {
        guard let socket else { return }
        replied = false
        var next = MonotonicClock.nanoseconds()
        for packet in packets {
            try socket.send(binary: packet)
            next += 20_000_000
            // Whatever arrives meanwhile is shown as it comes.
            while let message = try socket.receive(until: next) { handle(message) }
        }
        try awaitReply()
    }

    /// Until `response.done` (or the time-out).
    private mutating func awaitReply() throws(TalkSocket.Failure) {
        guard let socket else { return }
        let deadline = MonotonicClock.nanoseconds() + UInt64(timeout * 1e9)
        while !replied {
            guard let message = try socket.receive(until: deadline) else { throw .timedOut(timeout) }
            handle(message)
        }
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

    private func wait(for type: String) throws(TalkSocket.Failure) -> JSON {
        guard let socket else { throw .connect("not connected") }
        let deadline = MonotonicClock.nanoseconds() + UInt64(timeout * 1e9)
        while true {
            guard let message = try socket.receive(until: deadline) else { throw .timedOut(timeout) }
            if case .text(let text) = message, let event = try? JSON(parsing: text) {
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
