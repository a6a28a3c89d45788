import Codec
import Loop
import Models
import Speech
import Synchronization
import Testing
import TestSupport
import SpeechContracts

/// pocketsphinx answers a quiet with its hypothesis of all the audio so far (`SettledWords.hypothesis`),
/// however little has come since its last job: a paused reply waits for those words, so a one-word
/// barge-in whose partial is late on a busy CPU is not taken for a speech without words (it was
/// on a slow CI machine: "stop" resumed the reply in EchoGuardEndToEndTests).
@Suite struct SphinxSettledWordsTests {
    /// Short words, as a barge-in is, in several voices and speeds, at 16 kHz and at G.711's 8 kHz.
    static let cases: [(word: String, voice: String, wordsPerMinute: Int, rate: Int)] = [
        ("stop", "en-us", 175, 16_000), ("stop", "en-gb+f3", 175, 16_000), ("wait", "en-us+m3", 220, 16_000),
        ("stop", "en-gb+f3", 140, 8_000), ("hold on", "en-us", 175, 8_000),
    ]

    /// Every event the turn reports, until its final text.
    final class Events: Sendable {
        let list = Mutex<[TranscriptionEvent]>([])
        var settled: [String] { list.withLock { $0.compactMap { if case .settled(let text, _) = $0 { text } else { nil } } } }
        var finished: Bool { list.withLock { $0.contains { if case .final = $0 { true } else { false } } } }
    }

    /// Appends `samples` in one piece (less than a partial's 300 ms when the word is short), says
    /// quiet, then quiet again with nothing new, then finishes.
    func recognise(_ samples: [Int16], rate: Int) throws -> Events {
        let pool = try WorkerPool(name: "test-sphinx", threads: 1, queueLimit: 16)
        defer { pool.stop() }
        let transcriber = try SphinxTranscriber(decoders: 1, pool: pool)
        #expect(transcriber.settledWords == .hypothesis)
        let events = Events()
        let finished = try runLoop(seconds: 30) { loop, finish in
            let turn = transcriber.begin(on: loop, sampleRate: rate, choice: TranscriptionChoice()) { event in
                events.list.withLock { $0.append(event) }
                if case .final = event { finish() }
            }
            turn.append(samples)
            turn.quiet()
            poll(loop, until: { events.settled.count == 1 }) {
                turn.quiet()
                poll(loop, until: { events.settled.count == 2 }) { turn.finish() }
            }
        }
        #expect(finished, "the turn never finished: \(events.list.withLock { $0 })")
        return events
    }

    @Test(arguments: Self.cases)
    func aQuietSettlesTheWordsOfAllTheAudioSoFar(word: String, voice: String, wordsPerMinute: Int, rate: Int) throws {
        let wav = try WAVFile.read(path: try SpeechVectors.wav(word, voice: voice, wordsPerMinute: wordsPerMinute))
        let samples = try Resampler(from: wav.sampleRate, to: rate).process(wav.samples)
        let events = try recognise(samples, rate: rate)
        let settled = events.settled
        #expect(settled.count == 2)
        // A guess, often another word than was said, but a guess of the speech: never nothing.
        #expect(settled.first?.isEmpty == false, "\(word) (\(voice), \(wordsPerMinute) wpm, \(rate) Hz): \(events.list.withLock { $0 })")
        #expect(settled.first == settled.last, "no audio came between the quiets")
    }

    /// "No words" is an answer too: the paused reply resumes at once rather than after its wait.
    @Test func aQuietOverSilenceSettlesNoWords() throws {
        let events = try recognise([Int16](repeating: 0, count: 4_000), rate: 16_000)
        #expect(events.settled == ["", ""])
        #expect(events.finished)
    }
}
