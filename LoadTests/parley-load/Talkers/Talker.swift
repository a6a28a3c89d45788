import Loop
#if canImport(Glibc)
import Glibc
#endif

/// Speech made before the run, with where its words are (the synthesisers pad it with quiet).
struct SpokenLine: Sendable {
    let text: String
    let voice: TurnTakingVoice
    let samples: [Int16]
    let bounds: SpeechBounds
}

/// One talker of `talkers`: a session on /v1/realtime with the microphone always open (silence
/// between sentences, as a real one sends), speaking a sentence, waiting for the spoken reply to
/// have played out, then the next; every `bargeInEvery`th turn it speaks over the reply instead.
struct Talker: Sendable {
    let number: Int
    let target: LoadTarget
    let sessionUpdate: String
    /// This talker's sentences, in order (the turns cycle through them), and its interruptions.
    let sentences: [SpokenLine]
    let interruptions: [SpokenLine]
    let turns: Int
    let bargeInEvery: Int
    /// Quiet streamed before the first sentence, so the talkers do not all speak at once.
    let staggerMs: Int
    /// No new turn starts after this (monotonic nanoseconds), and a turn under way is cut short.
    let deadline: UInt64

    /// The reply is spoken over this long after its first audio arrived: early enough that the
    /// built-in agent's shorter replies are still playing when the barge-in has lasted the
    /// server's 500 ms (ReplyInterruption).
    static let bargeInAfterMs = 500
    /// The most quiet streamed after a sentence while waiting for its reply to be over.
    static let longestWaitMs = 30_000
    static let stopped = "input_audio_buffer.speech_stopped"
    static let audio = "response.output_audio.delta"

    private static func ms(_ from: UInt64, _ to: UInt64) -> Double { (Double(to) - Double(from)) / 1e6 }

    func run() throws -> [TalkerTurn] {
        let speaker = try RealtimeSpeaker(target, path: "/v1/realtime")
        defer { _ = speaker.finish() }
        guard speaker.await("session.created", seconds: 10) != nil else { throw LoadFailure("talker \(number): no session.created") }
        try speaker.send(sessionUpdate)
        guard speaker.await("session.updated", seconds: 10) != nil else {
            let errors = speaker.received.compactMap { $0.type == "error" ? $0.event?["error"]?["message"]?.string : nil }
            throw LoadFailure("talker \(number): session.update not taken: \(errors)")
        }
        // The microphone is open from the start: the detector learns the quiet.
        _ = try speaker.stream(TurnTakingCase.silence(ms: 500 + staggerMs)) { _, _ in MonotonicClock.nanoseconds() >= deadline }
        var out: [TalkerTurn] = []
        for index in 0..<turns where MonotonicClock.nanoseconds() < deadline {
            let line = sentences[index % sentences.count]
            let bargeIn = bargeInEvery > 0 && (index + 1) % bargeInEvery == 0
            out.append(try turn(index, line, bargeIn: bargeIn ? interruptions[(index / bargeInEvery) % interruptions.count] : nil, speaker))
        }
        return out
    }

    /// The reply to a turn that ended at `end`: the first response created from then on (not one
    /// still speaking from before, such as the answer to a pause taken for the end), its first
    /// audio delta and its `response.done`, as far as they came.
    static func reply(_ events: [RealtimeSpeaker.Received], after end: RealtimeSpeaker.Received)
        -> (created: RealtimeSpeaker.Received, firstAudio: RealtimeSpeaker.Received?, done: RealtimeSpeaker.Received?)? {
        guard let index = events.firstIndex(where: { $0.type == "response.created" && $0.at >= end.at }) else { return nil }
        let after = events[(index + 1)...]
        return (events[index], after.first { $0.type == audio }, after.first { $0.type == "response.done" })
    }

    /// Whether the reply to the speech whose last word went out at `spoken` is over: its
    /// `response.done` came and a player of all the turn's audio has run out (and
    /// 200 ms more); or no reply began 15 s after the turn ended, and nothing is playing.
    static func replyOver(_ events: [RealtimeSpeaker.Received], after spoken: UInt64, now: UInt64) -> Bool {
        guard let end = events.first(where: { $0.type == stopped && $0.at >= spoken }) else { return false }
        let playedOut = now >= TurnTakingCase.playbackEnd(events.filter { $0.type == audio }) + 200_000_000
        guard let reply = reply(events, after: end) else { return playedOut && now > end.at + 15_000_000_000 }
        return reply.done != nil && playedOut
    }

    private func turn(_ index: Int, _ line: SpokenLine, bargeIn interruption: SpokenLine?, _ speaker: RealtimeSpeaker) throws -> TalkerTurn {
        var turn = TalkerTurn(talker: number, index: index, voice: line.voice, text: line.text, bargeIn: interruption != nil)
        let from = speaker.receivedCount
        let started = MonotonicClock.nanoseconds()
        let lastWord = line.bounds.last
        let sent = try speaker.stream(line.samples + TurnTakingCase.silence(ms: Self.longestWaitMs), marking: [lastWord]) { _, sent in
            let now = MonotonicClock.nanoseconds()
            guard let spoken = sent[lastWord], now < deadline else { return now >= deadline }
            let events = speaker.received(from: from)
            guard interruption != nil else { return Self.replyOver(events, after: spoken, now: now) }
            // A barge-in waits for the reply to be a second in (or over: then there is nothing to cut).
            guard let end = events.first(where: { $0.type == Self.stopped && $0.at >= spoken }), let reply = Self.reply(events, after: end) else { return false }
            if reply.done != nil { return true }
            return reply.firstAudio.map { now >= $0.at + UInt64(Self.bargeInAfterMs) * 1_000_000 } ?? false
        }
        guard let spoken = sent[lastWord] else {
            turn.problem = "talker \(number) turn \(index): cut short by --duration before its last word"
            return turn
        }
        var events = speaker.received(from: from)
        turn.endedEarly = events.contains { $0.type == Self.stopped && $0.at >= started && $0.at < spoken }
        if let end = events.first(where: { $0.type == Self.stopped && $0.at >= spoken }) {
            turn.lastWordToStoppedMs = Self.ms(spoken, end.at)
            if let first = Self.reply(events, after: end)?.firstAudio {
                turn.stoppedToAudioMs = Self.ms(end.at, first.at)
                turn.lastWordToAudioMs = Self.ms(spoken, first.at)
            }
        }
        if let interruption, turn.stoppedToAudioMs != nil {
            try bargeIn(interruption, speaker, from: from, after: spoken, into: &turn)
            events = speaker.received(from: from)
        } else if interruption != nil {
            turn.problem = "talker \(number) turn \(index): no reply audio to speak over"
        }
        turn.timelines = events.compactMap { $0.event.flatMap(TalkerTurn.stages(of:)) }
        turn.trace = TalkerTurn.trace(events, from: started)
        return turn
    }

    /// Speaks `interruption` over the reply to the speech sent at `spoken`, and waits for the
    /// reply to the interruption to be over in turn.
    private func bargeIn(_ interruption: SpokenLine, _ speaker: RealtimeSpeaker, from: Int, after spoken: UInt64, into turn: inout TalkerTurn) throws {
        let firstWord = interruption.bounds.first, lastWord = interruption.bounds.last
        let sent = try speaker.stream(interruption.samples + TurnTakingCase.silence(ms: Self.longestWaitMs), marking: [firstWord, lastWord]) { _, sent in
            let now = MonotonicClock.nanoseconds()
            guard let spokenOver = sent[lastWord], now < deadline else { return now >= deadline }
            return Self.replyOver(speaker.received(from: from), after: spokenOver, now: now)
        }
        guard let barged = sent[firstWord] else { return }
        let events = speaker.received(from: from)
        guard let end = events.first(where: { $0.type == Self.stopped && $0.at >= spoken }),
              let reply = Self.reply(events, after: end), let firstAudio = reply.firstAudio, let done = reply.done else {
            let why = MonotonicClock.nanoseconds() >= deadline ? "cut short by --duration before the reply spoken over ended" : "the reply spoken over never ended"
            turn.problem = "talker \(turn.talker) turn \(turn.index): \(why)"
            return
        }
        guard done.at >= barged else {
            turn.problem = "talker \(turn.talker) turn \(turn.index): the reply was over before the barge-in"
            return
        }
        let cut = done.event?["response"]?["status"]?.string == "cancelled"
        turn.bargeCut = cut
        guard cut else { return }
        turn.bargeToCancelledMs = Self.ms(barged, done.at)
        if let last = events.last(where: { $0.type == Self.audio && $0.at >= firstAudio.at && $0.at <= done.at }) {
            turn.bargeToLastAudioMs = Self.ms(barged, last.at)
        }
        if let cleared = events.first(where: { $0.type == "output_audio_buffer.cleared" && $0.at >= barged }) {
            turn.bargeToClearedMs = Self.ms(barged, cleared.at)
        }
    }
}
