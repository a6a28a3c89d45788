import Loop

/// The offline default: `BuiltinAgent` decides the reply at once, and this streams it at a pace,
/// so clients see the same events as from a real model: a text reply a word at a time, or a call
/// to one of the client's functions (its start, then its arguments in two pieces). It reports no
/// usage: the session estimates it, as for every response whose model counts nothing.
public struct BuiltinModel: LanguageModel {
    public let name = "builtin"
    /// Seconds between words (and between a call's pieces): quick, but visibly streaming.
    public let wordInterval: Double

    public init(wordInterval: Double = 0.01) {
        self.wordInterval = wordInterval
    }

    public func stream(_ request: ModelRequest, on loop: EventLoop, _ onEvent: @escaping (ModelEvent) -> Void) -> any ModelCall {
        let action: BuiltinAgent.Action = if let language = request.language, language != "en" {
            .say(BuiltinAgent.onlyEnglish)
        } else {
            BuiltinAgent().respond(to: request.messages, tools: request.tools?.tools ?? [], choice: request.toolChoice)
        }
        let events: [ModelEvent]
        let reason: FinishReason
        switch action {
        case .say(let reply):
            events = Self.words(reply).map { .delta($0) }
            reason = .stop
        case .call(let name, let arguments):
            events = [.toolCallStarted(index: 0, id: Self.callID(), name: name)] + Self.pieces(arguments).map { .toolCallArgumentsDelta(index: 0, $0) }
            reason = .toolCalls
        }
        let call = PacedReply(events: events, reason: reason, interval: wordInterval, loop: loop, onEvent: onEvent)
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

    /// A call's arguments in two pieces, as a streaming API sends them (one, if too short to cut).
    static func pieces(_ arguments: String) -> [String] {
        guard arguments.count >= 2 else { return [arguments] }
        let middle = arguments.index(arguments.startIndex, offsetBy: arguments.count / 2)
        return [String(arguments[..<middle]), String(arguments[middle...])]
    }

    /// `call_` and 24 random letters and digits, as OpenAI's call ids: unique across sessions
    /// (the agent's replies are deterministic; its call ids are not).
    static func callID() -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        var generator = SystemRandomNumberGenerator()
        return "call_" + String((0..<24).map { _ in alphabet.randomElement(using: &generator)! })
    }
}

/// Streams prepared events on the loop's timers, one per interval, then finishes with `reason`.
final class PacedReply: ModelCall {
    private let events: [ModelEvent]
    private let reason: FinishReason
    private let interval: Double
    private let loop: EventLoop
    private let onEvent: (ModelEvent) -> Void
    private var next = 0
    private var pending: ScheduledTask?
    private var cancelled = false

    init(events: [ModelEvent], reason: FinishReason, interval: Double, loop: EventLoop, onEvent: @escaping (ModelEvent) -> Void) {
        self.events = events
        self.reason = reason
        self.interval = interval
        self.loop = loop
        self.onEvent = onEvent
    }

    func start() {
        pending = loop.schedule(after: 0) { self.step() }
    }

    func cancel() {
        cancelled = true
        pending?.cancel()
        pending = nil
    }

    private func step() {
        guard next < events.count else {
            pending = nil
            return onEvent(.finished(nil, reason: reason))
        }
        onEvent(events[next])
        next += 1
        // Cancelled by whoever took that event (a reply cut at its token limit): nothing follows.
        guard !cancelled else { return }
        pending = loop.schedule(after: interval) { self.step() }
    }
}
