import JSON
import Loop
#if canImport(Glibc)
import Glibc
#endif

/// One spoken case of `turn-taking`, run in a fresh session on one server, its outcome added to that
/// server's results. The session settings are the same on every server; only the servers' flags
/// (their detector and turn model) differ.
struct TurnTakingCase {
    enum Kind {
        /// A finished sentence: how soon after its last word the turn ends.
        case endOfTurn(String)
        /// A sentence with a pause mid-thought: whether the pause is taken for the end.
        case pause(category: String, first: String, second: String, ms: Int)
        /// Said one second into a spoken reply: must not cut it.
        case backchannel(String)
        /// Said one second into a spoken reply: must cut it, soon.
        case interruption(String)

        var name: String {
            switch self {
            case .endOfTurn: "end"
            case .pause: "pause"
            case .backchannel: "backchannel"
            case .interruption: "interruption"
            }
        }

        var text: String {
            switch self {
            case .endOfTurn(let text), .backchannel(let text), .interruption(let text): text
            case .pause(_, let first, let second, _): first + " … " + second
            }
        }
    }

    let kind: Kind
    let voice: TurnTakingVoice
    var line = TurnTakingLine.clean

    /// semantic_vad at auto eagerness: Smart Turn asked after 200 ms of quiet on a server with it,
    /// the eagerness's 500 ms of silence on one without. No replies: the turns alone are measured.
    static func listening(_ line: TurnTakingLine) -> String {
        #"{"type":"session.update","session":{"type":"realtime","audio":{"input":{"# + line.inputSettings
            + #","turn_detection":{"type":"semantic_vad","eagerness":"auto","create_response":false}}}}}"#
    }
    /// The same detection, answering and interrupting as the defaults do, with spoken replies.
    static func replying(_ line: TurnTakingLine) -> String {
        #"{"type":"session.update","session":{"type":"realtime","output_modalities":["audio"],"audio":{"input":{"# + line.inputSettings
            + #","turn_detection":{"type":"semantic_vad","eagerness":"auto","create_response":true,"interrupt_response":true}}}}}"#
    }
    /// The built-in agent does not understand this, and says so at length (with what it can do and
    /// how to plug in a model): about 20 s of espeak-ng, long enough to speak over.
    static let longReplyPrompt = #"{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_text","text":"Tell me a story about the sea."}]}}"#

    static func silence(ms: Int) -> [Int16] { [Int16](repeating: 0, count: 24 * ms) }
    static let stopped = "input_audio_buffer.speech_stopped"
    static let committed = "input_audio_buffer.committed"
    /// Streamed after the speech: past auto's longest wait (4 s), so a turn that ends at all ends in it.
    static let tailMs = 5_000

    /// The case's noise, the same on every run and server: from its text and voice.
    private var seed: UInt64 { (kind.text + voice.rawValue).utf8.reduce(1_469_598_103_934_665_603) { ($0 ^ UInt64($1)) &* 1_099_511_628_211 } }

    private static func ms(_ from: UInt64, _ to: UInt64) -> Double { (Double(to) - Double(from)) / 1e6 }

    /// When a player that starts with the first delta and plays each as it comes (waiting when it
    /// has nothing) runs out of the audio received.
    static func playbackEnd(_ deltas: [RealtimeSpeaker.Received]) -> UInt64 {
        deltas.reduce(UInt64(0)) { end, delta in max(end, delta.at) + UInt64(delta.audioMs * 1e6) }
    }

    func run(on target: LoadTarget, path: String, speech maker: TurnTakingSpeechMaker, into results: inout TurnTakingResults) throws {
        var record: [(String, JSON)] = [("scenario", .string(kind.name)), ("voice", .string(voice.rawValue)), ("text", .string(kind.text))]
        switch kind {
        case .endOfTurn(let text):
            try endOfTurn(try maker.say(text, voice), target, path, &results, &record)
        case .pause(let category, let first, let second, let ms):
            record.append(("category", .string(category)))
            try pause(SpeechBounds.trimmed(try maker.say(first, voice)), SpeechBounds.trimmed(try maker.say(second, voice)), ms, category, target, path, &results, &record)
        case .backchannel(let text), .interruption(let text):
            try spokenOver(try maker.say(text, voice), target, path, &results, &record)
        }
        results.cases.append(.object(record))
    }

    private func open(_ target: LoadTarget, _ path: String, _ update: String) throws -> RealtimeSpeaker {
        let speaker = try RealtimeSpeaker(target, path: path)
        speaker.phoneLine = try line.phoneLine()
        guard speaker.await("session.created", seconds: 10) != nil else {
            _ = speaker.finish()
            throw LoadFailure("\(target): no session.created")
        }
        try speaker.send(update)
        guard speaker.await("session.updated", seconds: 10) != nil else {
            let errors = speaker.finish().compactMap { $0.type == "error" ? $0.event?["error"]?["message"]?.string : nil }
            throw LoadFailure("\(target): session.update not taken: \(errors)")
        }
        return speaker
    }

    /// Streams `audio` until the turn ends after `lastWord` (and 300 ms more, for its commit), or to its end.
    private func streamUntilTheTurnEnds(_ speaker: RealtimeSpeaker, _ audio: [Int16], lastWord: Int, marking marks: [Int]) throws -> [Int: UInt64] {
        try speaker.stream(audio, marking: marks + [lastWord]) { offset, sent in
            guard let spoken = sent[lastWord], offset >= lastWord + 24 * 300 else { return false }
            return speaker.received.contains { $0.type == Self.stopped && $0.at >= spoken }
        }
    }

    private func endOfTurn(_ speech: [Int16], _ target: LoadTarget, _ path: String, _ results: inout TurnTakingResults, _ record: inout [(String, JSON)]) throws {
        guard let bounds = SpeechBounds(speech) else { throw LoadFailure("\(voice.description): silent speech for \(kind.text)") }
        let lead = Self.silence(ms: line.leadMs)
        let lastWord = lead.count + bounds.last
        let speaker = try open(target, path, Self.listening(line))
        let sent = try streamUntilTheTurnEnds(speaker, line.noisy(lead + speech + Self.silence(ms: Self.tailMs), seed: seed), lastWord: lastWord, marking: [])
        let events = speaker.finish()
        guard let spoken = sent[lastWord] else { throw LoadFailure("the last word was never sent") }
        let stops = events.filter { $0.type == Self.stopped }
        results.endedEarly.add(stops.contains { $0.at < spoken })
        let end = stops.first { $0.at >= spoken }
        results.neverEnded.add(end == nil)
        if let end {
            results.endOfTurnMs.append(Self.ms(spoken, end.at))
            record.append(("last_word_to_speech_stopped_ms", .number(Self.ms(spoken, end.at))))
        }
        record.append(("speech_stopped_before_last_word", .int(stops.filter { $0.at < spoken }.count)))
    }

    private func pause(_ first: [Int16], _ second: [Int16], _ pauseMs: Int, _ category: String, _ target: LoadTarget, _ path: String,
                       _ results: inout TurnTakingResults, _ record: inout [(String, JSON)]) throws {
        guard !first.isEmpty, !second.isEmpty else { throw LoadFailure("\(voice.description): silent speech for \(kind.text)") }
        let lead = Self.silence(ms: line.leadMs)
        let secondStarts = lead.count + first.count + 24 * pauseMs
        let lastWord = secondStarts + second.count - 1
        let speaker = try open(target, path, Self.listening(line))
        let audio = lead + first + Self.silence(ms: pauseMs) + second + Self.silence(ms: Self.tailMs)
        let sent = try streamUntilTheTurnEnds(speaker, line.noisy(audio, seed: seed), lastWord: lastWord, marking: [secondStarts])
        let events = speaker.finish()
        guard let resumed = sent[secondStarts], let spoken = sent[lastWord] else { throw LoadFailure("the second half was never sent") }
        // Premature: the server said the turn was over while the user was only pausing.
        let premature = events.contains { ($0.type == Self.stopped || $0.type == Self.committed) && $0.at < resumed }
        results.premature[pauseMs, default: .init()].add(premature)
        results.prematureByCategory[category, default: .init()].add(premature)
        if category != TurnTakingCommand.wholeQuestion { results.prematureMidThought[pauseMs, default: .init()].add(premature) }
        record += [("pause_ms", .int(pauseMs)), ("premature", .bool(premature))]
        if let end = events.first(where: { $0.type == Self.stopped && $0.at >= spoken }) {
            record.append(("last_word_to_speech_stopped_ms", .number(Self.ms(spoken, end.at))))
            // The whole sentence, once said, is a finished turn too: its wait counts with theirs.
            results.pausedThenFinishedMs.append(Self.ms(spoken, end.at))
        }
    }

    /// A backchannel or an interruption one second into a long spoken reply.
    private func spokenOver(_ speech: [Int16], _ target: LoadTarget, _ path: String, _ results: inout TurnTakingResults, _ record: inout [(String, JSON)]) throws {
        guard let bounds = SpeechBounds(speech) else { throw LoadFailure("\(voice.description): silent speech for \(kind.text)") }
        let speaker = try open(target, path, Self.replying(line))
        // The microphone is open before the reply: the detector learns the quiet.
        try speaker.append(line.noisy(Self.silence(ms: 1_000), seed: seed, speechLike: speech))
        try speaker.send(Self.longReplyPrompt)
        try speaker.send(#"{"type":"response.create"}"#)
        guard speaker.await("response.output_audio.delta", seconds: 10) != nil else {
            _ = speaker.finish()
            results.problems.append("\(kind.text) (\(voice.rawValue)): no spoken reply within 10 s (does the server have a synthesiser?)")
            return
        }
        // One second into the reply, the listener speaks; then the microphone stays open, quiet.
        let lead = Self.silence(ms: 1_000)
        let firstWord = lead.count + bounds.first, lastWord = lead.count + bounds.last
        let interrupting: Bool
        if case .interruption = kind { interrupting = true } else { interrupting = false }
        let sent = try speaker.stream(line.noisy(lead + speech + Self.silence(ms: 2_500), seed: seed &+ 1), marking: [firstWord, lastWord]) { offset, _ in
            // An interruption is over once its reply is; a backchannel is heard out to the end of the quiet.
            interrupting && offset > lastWord && speaker.received.contains { $0.type == "response.done" }
        }
        usleep(300_000)
        let events = speaker.finish()
        guard let spokeAt = sent[firstWord], let doneSpeaking = sent[lastWord] else { throw LoadFailure("the utterance was never sent") }
        let done = events.first { $0.type == "response.done" }
        if let done, done.at < spokeAt {
            results.problems.append("\(kind.text) (\(voice.rawValue)): the reply was over before the listener spoke")
            return
        }
        let status = done?.event?["response"]?["status"]?.string
        let cut = status == "cancelled"
        record += [("response_status", status.map(JSON.string) ?? .null),
                   ("reason", done?.event?["response"]?["status_details"]?["reason"]?.string.map(JSON.string) ?? .null)]
        let deltas = events.filter { $0.type == "response.output_audio.delta" && $0.at <= (done?.at ?? .max) }
        if interrupting {
            results.interruptionCuts.add(cut)
            if cut, let done {
                results.cancelledMs.append(Self.ms(spokeAt, done.at))
                record.append(("first_word_to_cancelled_ms", .number(Self.ms(spokeAt, done.at))))
                if let last = deltas.last {
                    results.audioStopsMs.append(Self.ms(spokeAt, last.at))
                    record.append(("first_word_to_last_audio_ms", .number(Self.ms(spokeAt, last.at))))
                    // The server sends up to 200 ms ahead in 100 ms deltas, so the last one can
                    // arrive before the word; what a client that plays all it got hears runs on.
                    let runsOut = Self.playbackEnd(deltas)
                    results.audioRunsOutMs.append(Self.ms(spokeAt, runsOut))
                    record.append(("first_word_to_audio_run_out_ms", .number(Self.ms(spokeAt, runsOut))))
                }
            }
        } else {
            results.backchannelCuts.add(cut)
            // Audio half a second after the last word: the reply went on (resumed, or never paused).
            let wentOn = !cut && deltas.contains { $0.at > doneSpeaking + 500_000_000 }
            results.backchannelResumed.add(wentOn)
            record.append(("reply_audio_went_on", .bool(wentOn)))
        }
    }
}
