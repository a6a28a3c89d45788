import Server
import Loop

/// The offline default: `BuiltinAgent` writes the reply at once, and this streams it a word at a
/// time, so clients see the same delta stream as from a real model. It reports no usage: the
/// session estimates it, as for every response whose model counts nothing.
public struct BuiltinModel: LanguageModel {
    public let name = "builtin"
    /// Seconds between words: quick, but visibly streaming.
    public let wordInterval: Double

    public init(wordInterval: Double = 0.01) {
        self.wordInterval = wordInterval
    }

    public func stream(_ request: ModelRequest, on loop: EventLoop, _ onEvent: @escaping (ModelEvent) -> Void) -> any ModelCall {
        let reply = BuiltinAgent().reply(to: request.messages)
        let call = PacedReply(words: Self.words(reply), interval: wordInterval, loop: loop, onEvent: onEvent)
        call.start()
        return call
    }

    /// Words with their leading spaces, so the deltas join back into the text exactly.
    static func words(_ text: String) -> [String] {
        var words: [String] = []
        var current = ""
        for character in text {
            if character == " " && !current.isEmpty && current != " " {
                words.append(current)
                current = ""
            }
            current.append(character)
        }
        if !current.isEmpty { words.append(current) }
        return words
    }
}

/// Streams prepared words on the loop's timers.
final class PacedReply: ModelCall {
    private let words: [String]
    private let interval: Double
    private let loop: EventLoop
    private let onEvent: (ModelEvent) -> Void
    private var next = 0
    private var pending: ScheduledTask?

    init(words: [String], interval: Double, loop: EventLoop, onEvent: @escaping (ModelEvent) -> Void) {
        self.words = words
        self.interval = interval
        self.loop = loop
        self.onEvent = onEvent
    }

    func start() {
        pending = loop.schedule(after: 0) { self.step() }
    }

    func cancel() {
        pending?.cancel()
        pending = nil
    }

    private func step() {
        guard next < words.count else {
            pending = nil
            return onEvent(.finished(nil))
        }
        onEvent(.delta(words[next]))
        next += 1
        pending = loop.schedule(after: interval) { self.step() }
    }
}
