import Codec
import JSON
import Loop
#if canImport(Glibc)
import Glibc
#endif

/// Runs one `EvalScript` against a Realtime server as a user would: one session, its microphone
/// open from the first spoken turn on (quiet between turns, as a real one sends), typed turns as
/// user messages, tool calls answered with the script's outputs, and every event stamped on
/// arrival. The observations are read from the whole event log once the run is over, so a reply
/// cut by a later interruption is seen whole.
struct EvalRun {
    let script: EvalScript
    let target: LoadTarget
    let path: String
    /// How long a turn waits for a reply to begin before it counts as none.
    let replyTimeoutMs: Int
    /// Spoken turns' audio at 24 kHz, by step index, made before the session opens.
    let speech: [Int: [Int16]]

    /// The longest a turn may take, its reply included.
    static let turnLimitMs = 60_000
    static let audioDelta = "response.output_audio.delta"
    static let textDelta = "response.output_text.delta"

    /// Makes the script's speech: each spoken turn in its voice, each recording read and resampled.
    static func speech(for script: EvalScript, directory: String, maker: () throws -> TurnTakingSpeechMaker) throws -> [Int: [Int16]] {
        var made: [Int: [Int16]] = [:]
        var speaker: TurnTakingSpeechMaker?
        for (index, step) in script.steps.enumerated() {
            guard case .turn(let turn) = step else { continue }
            switch turn.input {
            case .spoken(let text, let voice):
                if speaker == nil { speaker = try maker() }
                // Each part trimmed of the synthesiser's padding, so a written pause is the quiet heard.
                var samples: [Int16] = []
                for part in EvalScript.spokenParts(text) ?? [(text, 0)] {
                    samples += SpeechBounds.trimmed(try speaker!.say(part.words, voice)) + TurnTakingCase.silence(ms: part.pauseMs)
                }
                made[index] = samples
            case .recorded(let file):
                let full = file.hasPrefix("/") ? file : "\(directory)/\(file)"
                do {
                    let wav = try WAVFile.read(path: full)
                    made[index] = try Resampler(from: wav.sampleRate, to: 24_000).process(wav.samples)
                } catch {
                    throw LoadFailure("line \(turn.line): cannot read \(full): \(error)")
                }
            case .typed: break
            }
        }
        speaker?.remove()
        return made
    }

    /// Where a turn's events begin in the log, and its moments (monotonic ns).
    private struct TurnMark {
        let step: Int
        let from: Int
        var lastWord: UInt64 = 0
        var problem: String?
    }

    /// The observations, one per user turn in the script's order.
    func run() throws -> [EvalObservation] {
        let speaker = try RealtimeSpeaker(target, path: path)
        defer { _ = speaker.finish() }
        guard speaker.await("session.created", seconds: 10) != nil else { throw LoadFailure("\(target)\(path): no session.created within 10 s") }
        try update(script.openingSession, speaker)
        var tools = ToolAnswers(outputs: script.toolOutputs)
        let microphone = !speech.isEmpty
        if microphone {
            // The detector learns the room's quiet before the first word.
            _ = try speaker.stream(TurnTakingCase.silence(ms: 500))
        }
        var marks: [TurnMark] = []
        // Set when a turn's reply was over before the interruption that follows it began.
        var nothingToSpeakOver: String?
        for (index, step) in script.steps.enumerated() {
            switch step {
            case .update(let session):
                try update(session, speaker)
            case .pause(let ms):
                if microphone { _ = try speaker.stream(TurnTakingCase.silence(ms: ms)) } else { usleep(UInt32(ms) * 1_000) }
            case .turn(let turn):
                var after: Int?
                if index + 1 < script.steps.count, case .turn(let next) = script.steps[index + 1] { after = next.overPreviousAfterMs }
                var mark = TurnMark(step: index, from: speaker.receivedCount, problem: nothingToSpeakOver)
                nothingToSpeakOver = nil
                try take(turn, step: index, interruptAfterMs: after, speaker, microphone: microphone, tools: &tools, mark: &mark)
                if let after, mark.problem == nil, case let replies = Self.responses(speaker.received(from: mark.from), since: mark.lastWord),
                   replies.begun > 0, replies.open == 0 {
                    nothingToSpeakOver = "the reply it was to speak over had ended before \(after) ms of it had come"
                }
                marks.append(mark)
            }
        }
        // Late transcripts and the last reply's end.
        usleep(300_000)
        let log = speaker.finish()
        return marks.enumerated().map { n, mark in
            let end = n + 1 < marks.count ? marks[n + 1].from : log.count
            return observe(mark, Array(log[mark.from..<max(mark.from, end)]), log)
        }
    }

    private func update(_ session: JSON, _ speaker: RealtimeSpeaker) throws {
        let from = speaker.receivedCount
        try speaker.send(JSON.object([("type", .string("session.update")), ("session", session)]).description)
        let deadline = MonotonicClock.nanoseconds() + 10_000_000_000
        while MonotonicClock.nanoseconds() < deadline {
            let events = speaker.received(from: from)
            if events.contains(where: { $0.type == "session.updated" }) { return }
            if let error = events.first(where: { $0.type == "error" }) {
                throw LoadFailure("session.update refused: \(error.event?["error"]?["message"]?.string ?? "error")")
            }
            usleep(5_000)
        }
        throw LoadFailure("no session.updated within 10 s")
    }

    /// Sends one turn and waits until it settles: its replies done and played out, or none begun
    /// within the reply timeout; for a turn an interruption follows, until the moment to speak over it.
    private func take(_ turn: EvalScript.Turn, step: Int, interruptAfterMs: Int?, _ speaker: RealtimeSpeaker, microphone: Bool,
                      tools: inout ToolAnswers, mark: inout TurnMark) throws {
        let lastWord: UInt64
        switch turn.input {
        case .typed(let text):
            // Stamped before the sends: the reader stamps a response.created that comes back
            // faster than this thread goes on (the built-in agent answers in microseconds), and
            // one stamped before the "last word" would be taken for an early reply.
            lastWord = MonotonicClock.nanoseconds()
            tools.pendingSince = lastWord
            try speaker.send(JSON.object([("type", .string("conversation.item.create")), ("item", .object([
                ("type", .string("message")), ("role", .string("user")),
                ("content", .array([.object([("type", .string("input_text")), ("text", .string(text))])])),
            ]))]).description)
            try speaker.send(#"{"type":"response.create"}"#)
        case .spoken, .recorded:
            let samples = speech[step] ?? []
            let last = SpeechBounds(samples)?.last ?? max(0, samples.count - 1)
            let sent = try speaker.stream(samples, marking: [last])
            lastWord = sent[last] ?? MonotonicClock.nanoseconds()
            if !script.serverDetectsTurns {
                try speaker.send(#"{"type":"input_audio_buffer.commit"}"#)
                try speaker.send(#"{"type":"response.create"}"#)
                tools.pendingSince = MonotonicClock.nanoseconds()
            }
        }
        mark.lastWord = lastWord
        func done(_ now: UInt64) -> Bool {
            let events = speaker.received(from: mark.from)
            if (try? tools.answer(events, speaker)) == nil { return true }
            if now >= lastWord + UInt64(Self.turnLimitMs) * 1_000_000 {
                mark.problem = "the turn had not settled \(Self.turnLimitMs / 1000) s after the last word"
                return true
            }
            if let interruptAfterMs {
                let firstAudio = events.first { $0.type == Self.audioDelta && $0.at >= lastWord }
                if let firstAudio { return now >= firstAudio.at + UInt64(interruptAfterMs) * 1_000_000 }
                if now >= lastWord + UInt64(replyTimeoutMs) * 1_000_000 {
                    mark.problem = "no reply audio came to speak over"
                    return true
                }
                return false
            }
            return settled(events, lastWord: lastWord, now: now, pendingSince: tools.pendingSince)
        }
        if microphone {
            _ = try speaker.stream(TurnTakingCase.silence(ms: Self.turnLimitMs + 1_000)) { _, _ in done(MonotonicClock.nanoseconds()) }
        } else {
            while !done(MonotonicClock.nanoseconds()) { usleep(5_000) }
        }
    }

    /// Whether a turn is over: every response begun is done, none we asked for is still to begin,
    /// the audio has played out (a player starting at the first delta) and 300 ms have passed
    /// quietly; or nothing began within the reply timeout and nothing is playing.
    func settled(_ events: [RealtimeSpeaker.Received], lastWord: UInt64, now: UInt64, pendingSince: UInt64?) -> Bool {
        guard Self.responses(events).open == 0 else { return false }
        let created = events.filter { $0.type == "response.created" }
        if let pendingSince, !created.contains(where: { $0.at >= pendingSince }),
           now < pendingSince + UInt64(replyTimeoutMs) * 1_000_000 { return false }
        let playedOut = now >= TurnTakingCase.playbackEnd(events.filter { $0.type == Self.audioDelta }) + 200_000_000
        guard playedOut else { return false }
        if created.contains(where: { $0.at >= lastWord }) {
            return now >= (events.last { $0.type == "response.done" }?.at ?? 0) + 300_000_000
        }
        return now >= lastWord + UInt64(replyTimeoutMs) * 1_000_000
    }

    /// How many responses began in `events` at or after `moment`, and how many of those have not ended.
    static func responses(_ events: [RealtimeSpeaker.Received], since moment: UInt64 = 0) -> (begun: Int, open: Int) {
        let begun = events.filter { $0.type == "response.created" && $0.at >= moment }.compactMap { $0.event?["response"]?["id"]?.string }
        let ended = Set(events.filter { $0.type == "response.done" }.compactMap { $0.event?["response"]?["id"]?.string })
        return (begun.count, begun.count { !ended.contains($0) })
    }

    private func observe(_ mark: TurnMark, _ window: [RealtimeSpeaker.Received], _ log: [RealtimeSpeaker.Received]) -> EvalObservation {
        guard case .turn(let turn) = script.steps[mark.step] else { return EvalObservation(problem: "not a turn") }
        var seen = EvalObservation(problem: mark.problem)
        if case .typed(let text) = turn.input {
            seen.heard = text
        } else {
            let items = Set(window.filter { $0.type == "input_audio_buffer.committed" }.compactMap { $0.event?["item_id"]?.string })
            let transcripts = log.filter { $0.type == "conversation.item.input_audio_transcription.completed" && items.contains($0.event?["item_id"]?.string ?? "") }
            if !transcripts.isEmpty { seen.heard = transcripts.compactMap { $0.event?["transcript"]?.string }.joined(separator: " ") }
        }
        let created = window.filter { $0.type == "response.created" }
        seen.earlyReplies = created.filter { $0.at < mark.lastWord }.count
        let answering = created.filter { $0.at >= mark.lastWord }
        for response in answering {
            let id = response.event?["response"]?["id"]?.string
            let done = log.first { $0.type == "response.done" && $0.event?["response"]?["id"]?.string == id }
            seen.replies.append(Self.reply(done?.event?["response"]))
        }
        if let first = answering.first, let delta = log.first(where: { ($0.type == Self.audioDelta || $0.type == Self.textDelta) && $0.at >= first.at }) {
            seen.replyStartMs = (Double(delta.at) - Double(mark.lastWord)) / 1e6
        }
        return seen
    }

    /// A response as `response.done` gave it (nil: it never ended).
    static func reply(_ response: JSON?) -> EvalObservation.Reply {
        var texts: [String] = [], calls: [EvalObservation.ToolCall] = []
        for item in response?["output"]?.array ?? [] {
            switch item["type"]?.string {
            case "message":
                for part in item["content"]?.array ?? [] {
                    if let text = part["transcript"]?.string ?? part["text"]?.string, !text.isEmpty { texts.append(text) }
                }
            case "function_call":
                let arguments = item["arguments"]?.string.flatMap { try? JSON(parsing: $0) } ?? .null
                calls.append(EvalObservation.ToolCall(name: item["name"]?.string ?? "", arguments: arguments))
            default: break
            }
        }
        return EvalObservation.Reply(status: response?["status"]?.string, text: texts.joined(separator: " "), toolCalls: calls)
    }
}

/// The runner's side of tool calls: each call a completed response asked for is answered once with
/// the script's output for that tool, then a `response.create` asks the model to go on.
struct ToolAnswers {
    let outputs: [String: String]
    private var answered: Set<String> = []
    /// When the runner last asked for a response that has not begun yet.
    var pendingSince: UInt64?

    init(outputs: [String: String]) { self.outputs = outputs }

    mutating func answer(_ events: [RealtimeSpeaker.Received], _ speaker: RealtimeSpeaker) throws {
        for done in events where done.type == "response.done" && done.event?["response"]?["status"]?.string == "completed" {
            let calls = (done.event?["response"]?["output"]?.array ?? []).filter {
                $0["type"]?.string == "function_call" && !answered.contains($0["call_id"]?.string ?? "")
            }
            guard !calls.isEmpty else { continue }
            for call in calls {
                let id = call["call_id"]?.string ?? ""
                let name = call["name"]?.string ?? ""
                answered.insert(id)
                let output = outputs[name] ?? JSON.object([("error", .string("the eval script gives no output for \(name)"))]).description
                try speaker.send(JSON.object([("type", .string("conversation.item.create")), ("item", .object([
                    ("type", .string("function_call_output")), ("call_id", .string(id)), ("output", .string(output)),
                ]))]).description)
            }
            try speaker.send(#"{"type":"response.create"}"#)
            pendingSince = MonotonicClock.nanoseconds()
        }
    }
}
