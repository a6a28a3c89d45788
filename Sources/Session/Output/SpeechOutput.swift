import JSON
import Codec
import Models
import Server
import Synchronization
import Loop
import SpeechContracts
import SessionEngine

/// One reply's speech, on its session's loop: text in as the model streams it, sentences to the
/// synthesiser one at a time in order, their audio resampled and encoded on the speech workers,
/// then sent paced to real time with a small lead, so the client's buffer stays small and a
/// barge-in can stop what it has not yet been sent.
///
/// Opus replies (`/ws`) go as binary frames, one 20 ms packet each, 24 kHz mono VoIP at
/// complexity 5: about a third of complexity 10's cost (measured by `parley-load codec`) for
/// speech that is synthetic anyway. pcm16 replies go as base64 `response.output_audio.delta`
/// events of 100 ms at 24 kHz, G.711 ones (µ-law or A-law) as the same events of 20 ms at 8 kHz
/// (see `ReplyEncoder`). The pacing, and so what a barge-in can stop, is the same for all: on the
/// loop's one `PlayoutClock`, which the reply joins while it has pieces to send, rather than a
/// 20 ms timer a reply (at 500 calls, timers of their own were most of the server's profile).
package final class SpeechOutput: PlayoutClient {
    /// Audio sent ahead of real time: what the client buffers, and what a barge-in cannot recall
    /// (`--reply-lead-ms`, 200 by default). Why pace at all rather than send a reply as fast as it
    /// is made: what was sent is out of the server's hands, so a barge-in or a pause could only
    /// stop what is left; paced, they stop all but the lead, and how far the client got is known
    /// from the clock (`playedMs`) whatever the lead. A client on a lossy network asks for more.
    var leadMs = 200
    /// How far synthesis runs ahead of what the listener has played. Made as fast as the voice
    /// could, a 20 s reply cost its 2 s of Piper at once, beside the decodes the next turns waited
    /// on, and all of it even when the user cut the reply in its first second (a third of
    /// `parley-load talkers`' turns). A sentence takes 100 to 300 ms to make on one talker and
    /// up to 2 s at ten talkers on two cores (docs/benchmarks.md, "Talkers"), so 4 s ahead leaves
    /// a busy box room; a listener never waits on it.
    static let synthesisAheadMs = 4000
    static let opusComplexity = 5

    package enum Piece {
        case opus([UInt8])
        /// The reply's pcm16 (little-endian) or G.711 bytes (G.711 is pulse-code modulation too):
        /// each carrier writes them in its own dialect (base64 in the Realtime API's JSON and in
        /// Twilio's, RTP payloads on a SIP call).
        case pcm([UInt8])
    }

    let location: ContentLocation
    private let voice: SpeechVoice
    private let format: RealtimeAudioFormat
    private let synthesizer: any Synthesizer
    private let pool: WorkerPool
    private let loop: EventLoop
    private let send: (Piece) -> Void
    private let report: (SpeechOutputEvent) -> Void
    private let encoder: ReplyEncoder
    /// How long each piece it sends lasts.
    var pieceMs: Int { encoder.frameMs }

    private var text = ""
    /// The first sentence's sound, made while the turn was ending (`PreparedSpeech`): used if the
    /// first sentence is its text, cancelled otherwise.
    var prepared: PreparedSpeech?
    private var sentences: [String] = []
    /// A first piece went to the voice: later ones are whole sentences.
    private var startedSpeaking = false
    private var speaking: (any ModelCall)?
    private var textEnded = false
    private var audio: [([Int16], Int)] = []
    private var encoding: OffloadTicket?
    /// Each piece with its reference audio (the echo guard's, until it is sent).
    private var queue: [(piece: Piece, ms: Int, reference: [Int16]?)] = []
    private var queueHead = 0
    /// Where `queue[0]` begins in the reply. Pieces already sent stay queued for `retainedMs`, so
    /// that a listener whose queue was cleared (a carrier's `clear`) can be sent them again.
    private var queueBaseMs = 0
    /// How much sent audio is kept: `resendWindowMs` for a wire that clears its listener's queue
    /// on a pause (Twilio), none for the others (2 s of pcm16 in base64 would be 128 KB a reply).
    var retainedMs = 0
    static let resendWindowMs = 2000
    /// The listener's leg takes the pieces itself, one a tick of its own clock (`pull`: a SIP
    /// call's RTP, a packet every 20 ms), so the reply's queue is the only one: nothing is sent
    /// ahead into a second queue at the leg, and the reply is not on the clock itself (issue 71).
    var pulledByLeg = false
    private var startedAt: UInt64?
    private var sentMs = 0
    /// On the loop's playout clock: while it has pieces to send and is neither paused nor over.
    private var onClock = false
    private var over = false
    /// Set while the user's speech holds the reply (`pause`): nothing is sent, and the pace's
    /// clock stands still, so that `resume` goes on from where it stopped.
    private var pausedAt: UInt64?
    /// The sentence being synthesised, and how much audio it has made so far.
    private var current: (text: String, ms: Int)?
    /// Sentences synthesised, each with where its audio ends (from the reply's start): what maps
    /// a point in the audio back onto the words, for a reply cut short.
    private var spoken: [(text: String, endMs: Int)] = []
    private var synthesizedMs = 0
    /// Called once each, when the first sentence goes to the voice, its first audio comes back,
    /// and the first audio goes to the client: the turn's stage timing (`TurnTimeline`).
    var onFirstSentence: (() -> Void)?
    var onFirstSynthesized: (() -> Void)?
    var onFirstAudio: (() -> Void)?
    /// For the echo guard: each piece's audio at the session's input rate (`referenceRate`), with
    /// when the client plays it (by the pace's clock, the listener starting on the first piece).
    var onPlayed: ((_ samples: [Int16], _ playsAt: UInt64) -> Void)?

    /// `referenceRate`: also keep each piece's audio at this rate, for `onPlayed` (the echo guard's
    /// reference); nil: none is made.
    init(location: ContentLocation, voice: SpeechVoice, format: RealtimeAudioFormat, synthesizer: any Synthesizer, pool: WorkerPool,
         loop: EventLoop, referenceRate: Int? = nil, inbandFEC: Bool = false, send: @escaping (Piece) -> Void,
         report: @escaping (SpeechOutputEvent) -> Void) throws {
        self.location = location
        self.voice = voice
        self.format = format
        self.synthesizer = synthesizer
        self.pool = pool
        self.loop = loop
        self.send = send
        self.report = report
        encoder = try ReplyEncoder(format: format, referenceRate: referenceRate, inbandFEC: inbandFEC)
    }

    func add(_ piece: String) {
        guard !over else { return }
        text += piece
        // The reply's first piece may end at a clause, so that the voice starts on "Sure, I can
        // help with that," while the model is still writing the sentence's end; after it, whole
        // sentences (the voice splits them into clauses itself).
        while let end = SpokenSentences.sentenceEnd(in: text) ?? (startedSpeaking ? nil : SpokenSentences.clauseEnd(in: text)) {
            let sentence = String(text[..<end]).trimmed
            text = String(text[end...])
            if !sentence.isEmpty {
                sentences.append(sentence)
                startedSpeaking = true
            }
        }
        speakNext()
    }

    func end() {
        guard !over else { return }
        let rest = text.trimmed
        text = ""
        if !rest.isEmpty { sentences.append(rest) }
        textEnded = true
        speakNext()
        finishIfDone()
    }

    /// Sends nothing more until `resume`; synthesis and encoding go on, into the queue. What was
    /// sent already (at most `leadMs` ahead) still plays at the client.
    /// `rewindToMs`: the listener's queue was dropped and it heard this much; what it did not hear
    /// is sent again on `resume` (as far back as the pieces kept allow).
    func pause(rewindToMs heard: Int? = nil) {
        guard !over, pausedAt == nil else { return }
        pausedAt = loop.nanoseconds()
        if let heard { rewind(to: heard) }
        leaveClock()
    }

    /// Sends the rest from where it paused, paced as before: the pace's clock is set back to what
    /// the client has played (it played out the lead while paused), so the lead is rebuilt at once
    /// and the reply goes on without a jump.
    func resume() {
        guard !over, pausedAt != nil else { return }
        let played = playedMs
        pausedAt = nil
        if startedAt != nil { startedAt = loop.nanoseconds() &- UInt64(played) * 1_000_000 }
        pace()
        finishIfDone()
    }

    var isPaused: Bool { pausedAt != nil }

    private func rewind(to heardMs: Int) {
        var ms = queueBaseMs
        var index = 0
        while index < queueHead, ms + queue[index].ms <= heardMs {
            ms += queue[index].ms
            index += 1
        }
        queueHead = index
        sentMs = ms
        // The listener's clock restarts from what it heard.
        if startedAt != nil { startedAt = loop.nanoseconds() &- UInt64(ms) * 1_000_000 }
    }

    /// Stops at once; what the client had had time to play, in milliseconds and in words. `heardMs`:
    /// what the listener is known to have heard (a carrier's marks), rather than the pace's estimate.
    func stop(heardMs: Int? = nil) -> (playedMs: Int, heard: String) {
        let played = heardMs.map { min($0, sentMs) } ?? playedMs
        let heard = heardText(playedMs: played)
        over = true
        dropPrepared()
        speaking?.cancel()
        encoding?.cancel()
        leaveClock()
        speaking = nil
        encoding = nil
        return (played, heard)
    }

    /// A prepared sound not taken is cancelled; one taken is `speaking` now, and stays.
    private func dropPrepared() {
        if let prepared, prepared !== speaking { prepared.cancel() }
        prepared = nil
    }

    /// The words of the first `playedMs` of the reply: whole sentences whose audio was played, and
    /// of the sentence playing then, its words in proportion to the part played (cut at a word).
    func heardText(playedMs: Int) -> String {
        var words: [String] = []
        var startMs = 0
        var sentences = spoken
        if let current { sentences.append((current.text, synthesizedMs)) }
        for sentence in sentences {
            if sentence.endMs <= playedMs {
                words.append(sentence.text)
            } else {
                let length = max(1, sentence.endMs - startMs)
                let characters = sentence.text.count * max(0, playedMs - startMs) / length
                let part = SessionEngine.wordPrefix(of: sentence.text, characters: characters)
                if !part.isEmpty { words.append(part) }
                break
            }
            startMs = sentence.endMs
        }
        return words.joined(separator: " ")
    }

    private var playedMs: Int {
        // Pulled a piece a tick, what was sent is what has played (but the piece going out now).
        if pulledByLeg { return sentMs }
        guard let startedAt else { return 0 }
        // Paused or not, the client plays what it was sent in real time.
        return min(sentMs, Int((loop.nanoseconds() &- startedAt) / 1_000_000))
    }

    /// The next sentence to the voice: the first at once, a later one once the listener is within
    /// `synthesisAheadMs` of the audio made so far (`pace` asks again as it plays).
    private func speakNext() {
        guard !over, speaking == nil, !sentences.isEmpty else { return }
        let first = spoken.isEmpty
        guard first || synthesizedMs - playedMs < Self.synthesisAheadMs else { return }
        let sentence = sentences.removeFirst()
        current = (sentence, 0)
        onFirstSentence?()
        onFirstSentence = nil
        let handler: (SynthesisEvent) -> Void = { [weak self] event in self?.synthesized(event) }
        if let prepared, first, prepared.speaks(sentence, in: voice) {
            speaking = prepared.take(handler)
        } else {
            speaking = synthesizer.speak(sentence, voice: voice, urgency: first ? .waited : .ahead, on: loop, handler)
        }
        if first { dropPrepared() }
    }

    private func synthesized(_ event: SynthesisEvent) {
        guard !over else { return }
        switch event {
        case .audio(let samples, let rate):
            onFirstSynthesized?()
            onFirstSynthesized = nil
            audio.append((samples, rate))
            synthesizedMs += samples.count * 1000 / max(1, rate)
            encodeNext()
        case .finished:
            if let current { spoken.append((current.text, synthesizedMs)) }
            current = nil
            speaking = nil
            speakNext()
            finishIfDone()
        case .failed(let error):
            speaking = nil
            sentences = []
            report(.failed(error))
            finishIfDone()
        }
    }

    private func encodeNext() {
        guard !over, encoding == nil, !audio.isEmpty else { return }
        let (samples, rate) = nextAudio()
        let encoder = encoder
        encoding = loop.offload(to: pool, { encoder.encode(samples, rate: rate) }) { [weak self] pieces in
            self?.encoded(pieces)
        }
        if encoding == nil {
            report(.failed(ModelError(code: "overloaded", message: "the speech worker queue is full")))
            audio = []
            finishIfDone()
        }
    }

    /// The next synthesised audio to encode. The reply's first piece is encoded by itself, so that
    /// it leaves as soon as it is ready, not once its whole clause (a second or more of audio) is:
    /// a frame's work, not a clause's. 10 ms more than a piece, for what the resampler holds back
    /// at its start.
    private func nextAudio() -> (samples: [Int16], rate: Int) {
        let (samples, rate) = audio.removeFirst()
        let firstPiece = rate * (encoder.frameMs + 10) / 1000
        guard startedAt == nil, queue.isEmpty, samples.count > 2 * firstPiece else { return (samples, rate) }
        audio.insert((Array(samples[firstPiece...]), rate), at: 0)
        return (Array(samples[..<firstPiece]), rate)
    }

    private func encoded(_ pieces: [ReplyEncoder.Encoded]) {
        encoding = nil
        for piece in pieces { queue.append((piece.opus.map(Piece.opus) ?? .pcm(piece.pcm ?? []), piece.ms, piece.reference)) }
        pace()
        encodeNext()
        finishIfDone()
    }

    /// Sends what real time plus the lead allows, and comes back in 20 ms for the rest (a reply
    /// its leg pulls only makes ready: `pull` sends).
    private func pace() {
        guard !over, pausedAt == nil else { return }
        if !pulledByLeg {
            let allowed = (startedAt.map { Int((loop.nanoseconds() &- $0) / 1_000_000) } ?? 0) + leadMs
            while queueHead < queue.count, sentMs < allowed { sendNext() }
        }
        speakNext()
        letGoOfSent()
        if !pulledByLeg, !onClock, queueHead < queue.count {
            onClock = true
            _ = PlayoutClock.on(loop).add(self)
        }
    }

    /// The next piece of a reply its leg pulls (`pulledByLeg`), sent now through `send`; false
    /// when none is ready (paused, over, or not yet made: the leg sends silence).
    func pull() -> Bool {
        guard pulledByLeg, !over, pausedAt == nil, queueHead < queue.count else { return false }
        sendNext()
        speakNext()
        letGoOfSent()
        finishIfDone()
        return true
    }

    /// The queue's head piece goes out.
    private func sendNext() {
        if startedAt == nil {
            startedAt = loop.nanoseconds()
            onFirstAudio?()
        }
        send(queue[queueHead].piece)
        if let reference = queue[queueHead].reference {
            // Kept with the pieces kept for sending again (Twilio), whose echo comes again too.
            if retainedMs == 0 { queue[queueHead].reference = nil }
            // It plays when the pace's clock reaches it, and never before it is sent.
            let now = loop.nanoseconds()
            onPlayed?(reference, max(now, (startedAt ?? now) &+ UInt64(sentMs) * 1_000_000))
        }
        sentMs += queue[queueHead].ms
        queueHead += 1
    }

    private func letGoOfSent() {
        // Sent pieces older than `retainedMs` are let go.
        var drop = 0
        var dropMs = 0
        while drop < queueHead, queueBaseMs + dropMs + queue[drop].ms <= sentMs - retainedMs {
            dropMs += queue[drop].ms
            drop += 1
        }
        if drop > 0 {
            queue.removeFirst(drop)
            queueHead -= drop
            queueBaseMs += dropMs
        }
    }

    private func leaveClock() {
        guard onClock else { return }
        onClock = false
        PlayoutClock.on(loop).remove(self)
    }

    // MARK: PlayoutClient

    package var playoutEnded: Bool { over }

    /// The clock's tick for this reply's slot: what real time plus the lead allows goes out; with
    /// nothing left to send (or paused, or over) it leaves the clock until more is made.
    package func send(dueBy now: UInt64, nextTick: UInt64) {
        pace()
        finishIfDone()
        if over || pausedAt != nil || queueHead == queue.count { leaveClock() }
    }

    package func play(dueBy now: UInt64, nextTick: UInt64) {}

    private func finishIfDone() {
        guard !over, textEnded, sentences.isEmpty, speaking == nil, encoding == nil, audio.isEmpty, queueHead == queue.count else { return }
        if encoder.hasRemainder {
            // The last partial frame, padded with silence.
            audio.append(([], encoder.rate))
            return encodeNext()
        }
        over = true
        leaveClock()
        dropPrepared()
        report(.spoken(itemID: location.itemID, audioMs: sentMs))
        report(.finished)
    }
}

/// The reply's encoder state: resamplers, the Opus encoder and the samples short of a frame. Used
/// by one job at a time (`SpeechOutput` keeps one encoding in flight), on whichever worker runs it.
///
/// Each format is sent at its own rate, resampled once from the synthesiser's: pcm16 and Opus at
/// 24 kHz, G.711 at 8 kHz straight from the synthesiser's rate (espeak-ng's 22,050 Hz), not
/// through 24 kHz, so no audio is made that the telephone band would drop.
final class ReplyEncoder: @unchecked Sendable {
    struct Encoded: Sendable {
        var opus: [UInt8]?
        /// pcm16 (little-endian) or G.711 bytes.
        var pcm: [UInt8]?
        var ms: Int
        /// The piece's audio at the echo guard's rate, when one asked.
        var reference: [Int16]?
    }

    /// Samples a second sent, and how many make one piece: Opus packets of 20 ms; pcm16 deltas of
    /// 100 ms (the Realtime API's clients play what comes, so fewer, larger events cost less);
    /// G.711 deltas of 20 ms, 160 bytes, the packet size of telephony (RTP's default for PCMU,
    /// RFC 3551 section 4.5.14, and Twilio's media messages), which a bridge passes on as it is.
    let rate: Int
    let frameMs: Int
    var frameSamples: Int { rate / 1000 * frameMs }

    private let opus: OpusEncoder?
    private let law: G711.Law?
    private var resamplers: [Int: Resampler] = [:]
    /// The echo guard's reference: the sent audio at the session's input rate.
    private let referenceRate: Int?
    private let toReference: Resampler?
    private var remainder: [Int16] = []
    private let lock = Mutex(())

    /// `inbandFEC`: Opus packets carry a coarse copy of the one before, planned for 10 % loss
    /// (`SessionWire.carriesLossyMedia`).
    init(format: RealtimeAudioFormat, referenceRate: Int? = nil, inbandFEC: Bool = false) throws {
        law = format.g711Law
        self.referenceRate = referenceRate
        switch format {
        case .opus:
            rate = 24_000
            frameMs = 20
            opus = try OpusEncoder(format: AudioFormat(sampleRate: .hz24000, channels: .mono), application: .voip,
                                   settings: .init(bitrate: 24_000, complexity: SpeechOutput.opusComplexity, inbandFEC: inbandFEC,
                                                   expectedPacketLossPercent: inbandFEC ? 10 : 0))
        case .pcm16, .pcm16k:
            rate = format.sampleRate
            frameMs = 100
            opus = nil
        case .pcmu, .pcma:
            rate = G711.sampleRate
            frameMs = 20
            opus = nil
        }
        if let referenceRate, referenceRate != rate {
            toReference = try Resampler(from: rate, to: referenceRate)
        } else {
            toReference = nil
        }
    }

    /// A frame as the echo guard hears it played: itself when the rates agree, else resampled
    /// (the resampler's state carries across frames, so the reference is one continuous signal).
    private func reference(_ chunk: ArraySlice<Int16>) -> [Int16]? {
        guard referenceRate != nil else { return nil }
        guard let toReference else { return Array(chunk) }
        return Array(chunk).withUnsafeBufferPointer { toReference.process($0) }
    }

    var hasRemainder: Bool { lock.withLock { _ in !remainder.isEmpty } }

    /// Encodes what makes whole frames and keeps the rest; no samples means the end: the rest is
    /// padded with silence to a last frame.
    func encode(_ samples: [Int16], rate from: Int) -> [Encoded] {
        lock.withLock { _ in
            let clock = ThreadCPUClock()
            var pcm = remainder
            if !samples.isEmpty {
                if from == rate {
                    pcm += samples
                } else if let resampler = resampler(from: from) {
                    pcm += resampler.process(samples)
                }
            }
            let frame = frameSamples
            if samples.isEmpty, pcm.count % frame != 0 { pcm += [Int16](repeating: 0, count: frame - pcm.count % frame) }
            let whole = pcm.count / frame * frame
            var out: [Encoded] = []
            if let law {
                // One buffer for every frame of this job, then a delta per frame.
                let bytes = G711.encode(Array(pcm[..<whole]), law)
                for start in stride(from: 0, to: whole, by: frame) {
                    out.append(Encoded(pcm: Array(bytes[start..<(start + frame)]), ms: frameMs, reference: reference(pcm[start..<(start + frame)])))
                }
            } else {
                for start in stride(from: 0, to: whole, by: frame) {
                    let chunk = Array(pcm[start..<(start + frame)])
                    if let opus {
                        if let packet = try? opus.encode(chunk) { out.append(Encoded(opus: packet, ms: frameMs, reference: reference(chunk[...]))) }
                    } else {
                        out.append(Encoded(pcm: PCM.littleEndianBytes(chunk), ms: frameMs, reference: reference(chunk[...])))
                    }
                }
            }
            remainder = Array(pcm[whole...])
            let seconds = Double(whole) / Double(rate)
            if seconds > 0 { SpeechMetrics.shared.encodingRealTimeFactor.observe(seconds: clock.elapsed / seconds) }
            return out
        }
    }

    private func resampler(from input: Int) -> Resampler? {
        if let r = resamplers[input] { return r }
        let r = try? Resampler(from: input, to: rate)
        resamplers[input] = r
        return r
    }
}
