import Loop
import Models
import Synchronization
import Testing
@testable import Session
import SpeechContracts
@testable import SessionEngine

/// A reply's sentences go to the voice as the listener nears them, not all at once
/// (`SpeechOutput.synthesisAheadMs`): a reply cut in its first second has cost one sentence of
/// synthesis, not the whole reply, and only its first sentence is asked for as `.waited`.
@Suite struct SynthesisAheadTests {
    /// Makes each sentence `sentenceMs` of quiet at 24 kHz at once (on the loop), and notes every
    /// request's urgency.
    final class InstantVoice: Synthesizer, @unchecked Sendable {
        let name = "instant"
        let sentenceMs: Int
        let requests = Mutex<[SynthesisUrgency]>([])

        init(sentenceMs: Int) { self.sentenceMs = sentenceMs }

        final class Call: ModelCall {
            var cancelled = false
            func cancel() { cancelled = true }
        }

        func speak(_ text: String, voice: SpeechVoice, urgency: SynthesisUrgency, on loop: EventLoop,
                   _ onEvent: @escaping (SynthesisEvent) -> Void) -> any ModelCall {
            requests.withLock { $0.append(urgency) }
            let call = Call()
            let samples = [Int16](repeating: 0, count: 24 * sentenceMs)
            loop.schedule(after: 0) {
                guard !call.cancelled else { return }
                onEvent(.audio(samples, sampleRate: 24_000))
                onEvent(.finished)
            }
            return call
        }
    }

    /// Runs a reply of `sentences` sentences for `seconds` of the loop's time (or until it ends),
    /// then stops it as a barge-in would; the urgencies asked for and whether it finished.
    /// Either way, the reply leaves the loop's playout clock: nothing of it is held or ticked for.
    func speak(sentences: Int, sentenceMs: Int, forSeconds seconds: Double) throws -> (requests: [SynthesisUrgency], finished: Bool) {
        let loop = try EventLoop(handle: LoopHandle(index: 0))
        let pool = try WorkerPool(name: "synthesis-ahead-test", threads: 1, queueLimit: 64)
        let voice = InstantVoice(sentenceMs: sentenceMs)
        var finished = false
        let output = try SpeechOutput(location: ContentLocation(responseID: "resp_1", itemID: "item_1", outputIndex: 0),
                                      voice: SpeechVoice(name: "alloy"), format: .pcm16, synthesizer: voice, pool: pool, loop: loop,
                                      send: { _ in }, report: { event in
                                          if case .finished = event {
                                              finished = true
                                              loop.stop()
                                          }
                                      })
        output.add((1...sentences).map { "Sentence number \($0) is here." }.joined(separator: " "))
        output.end()
        loop.schedule(after: seconds) {
            _ = output.stop()
            loop.stop()
        }
        loop.run()
        #expect(PlayoutClock.on(loop).clients == 0 && !PlayoutClock.on(loop).isRunning, "the reply stayed on the loop's clock")
        return (voice.requests.withLock { $0 }, finished)
    }

    @Test func aReplyCutInItsFirstSecondAskedForItsFirstSentenceOnly() throws {
        // Ten sentences of 10 s: the first is made at once, and the second not until the listener
        // is within 4 s of its end (6 s in), long after the cut at half a second.
        let (requests, finished) = try speak(sentences: 10, sentenceMs: 10_000, forSeconds: 0.5)
        #expect(!finished)
        #expect(requests == [.waited])
    }

    @Test func aReplyHeardOutAsksForEverySentenceAndOnlyTheFirstAsWaited() throws {
        // Eight sentences of 100 ms: all within the 4 s ahead at once, the reply plays out in 0.8 s.
        let (requests, finished) = try speak(sentences: 8, sentenceMs: 100, forSeconds: 30)
        #expect(finished)
        #expect(requests == [.waited] + Array(repeating: .ahead, count: 7))
    }
}
