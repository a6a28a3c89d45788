import Codec
import Loop
import Models
@testable import Speech
import Testing
import TestSupport
import SpeechContracts

/// The end-of-turn model asked about a turn its recogniser already streams to the speech helper:
/// the verdict names the stream (`TranscriptionSession.heldAudio`), so the turn's audio crosses
/// once. Real Whisper and Smart Turn v3.2 in a real helper, real speech in three voices.
@Suite(.serialized) struct TurnVerdictByStreamTests {
    static let helper = RunningSpeechHelper(["--whisper", ".venv-speech/whisper-tiny.en",
                                             "--smart-turn", ".venv-speech/smart-turn/smart-turn-v3.2-cpu.onnx"], workers: 1)

    static let voices: [WordErrorRate.Voice] = [.piper(lengthScale: 1.0), .piper(lengthScale: 1.3), .espeak("en-gb+f3", wordsPerMinute: 150)]

    /// The same turn judged twice: once by the stream's name with no samples given, once with its
    /// samples sent. The model reads the same audio both ways, so it gives the same probability;
    /// had the named verdict read the (empty) samples, or another stream, it could not.
    @Test(arguments: voices) func aVerdictByTheStreamsNameJudgesTheStreamsAudio(voice: WordErrorRate.Voice) throws {
        let helper = try #require(Self.helper, "the speech helper did not start")
        let turn = try voice.say("Could you tell me what the weather will be like in Paris tomorrow?", rate: 16_000)
            + [Int16](repeating: 0, count: 16 * 300)
        let model = SmartTurn(helper: helper.status, timeoutSeconds: 20)
        var named: Result<TurnVerdict, ModelError>?
        var sent: Result<TurnVerdict, ModelError>?
        var held: HeldAudio?
        let finished = try runLoop(seconds: 40) { loop, finish in
            let transcription = WhisperTranscriber(helper: helper.status).begin(on: loop, sampleRate: 16_000, choice: TranscriptionChoice()) { _ in }
            for start in stride(from: 0, to: turn.count, by: 320) { transcription.append(Array(turn[start..<min(turn.count, start + 320)])) }
            held = transcription.heldAudio
            guard let held else { return finish() }
            _ = model.judge(TurnAudio(samples: [], sampleRate: 16_000, held: held), on: loop) { result in
                named = result
                _ = model.judge(TurnAudio(samples: turn[...], sampleRate: 16_000, held: nil), on: loop) { result in
                    sent = result
                    transcription.cancel()
                    finish()
                }
            }
        }
        #expect(finished, "the verdicts did not come")
        #expect(held != nil, "the transcription holds no stream")
        let byName = try #require(try named?.get(), "\(String(describing: named))")
        let bySamples = try #require(try sent?.get(), "\(String(describing: sent))")
        #expect(abs(byName.probability - bySamples.probability) < 1e-4, "\(voice): \(byName) by name, \(bySamples) sent")
        #expect(byName.complete == bySamples.complete)
    }

    /// A name another connection gave, or one at another rate, is not this connection's stream:
    /// the samples are sent instead.
    @Test func aNameThatIsNotThisConnectionsStreamSendsTheSamples() throws {
        let helper = try #require(Self.helper, "the speech helper did not start")
        _ = try runLoop(seconds: 10) { loop, finish in
            let connection = SpeechHelperConnection.on(loop, helper.status)
            let id = try #require(connection.openStream(rate: 16_000) { _ in })
            #expect(connection.stream(connection.held(id), rate: 16_000) == id)
            #expect(connection.stream(connection.held(id), rate: 8_000) == nil)
            #expect(connection.stream(HeldAudio(holder: ObjectIdentifier(helper), name: id), rate: 16_000) == nil)
            #expect(connection.stream(connection.held(id + 1), rate: 16_000) == nil)
            connection.closeStream(id, tell: true)
            #expect(connection.stream(connection.held(id), rate: 16_000) == nil)
            finish()
        }
    }
}
