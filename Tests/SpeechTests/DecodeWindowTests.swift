import Codec
import JSON
import Loop
import Models
@testable import Speech
import Testing
import TestSupport
import SpeechContracts

/// A decode reads its stream up to `samples` when it names them (where the VAD said the turn went
/// quiet), not whatever the stream holds when the helper takes it: audio appended after the quiet,
/// but before the decode is made, is not heard (issue 74: under load a quiet's decode was shed or
/// queued and the final one read more of a noisy line). Real Whisper in a real helper.
@Suite(.serialized) struct DecodeWindowTests {
    static let helper = RunningSpeechHelper(["--whisper", ".venv-speech/whisper-tiny.en"], workers: 1)

    @Test(arguments: ["partial", "finish"]) func aDecodeReadsTheStreamUpToTheSamplesItNames(op: String) throws {
        let helper = try #require(Self.helper, "the speech helper did not start")
        let voice = WordErrorRate.Voice.piper(lengthScale: 1.0)
        let first = try voice.say("Turn off the lights in the kitchen.", rate: 16_000) + [Int16](repeating: 0, count: 16 * 300)
        let then = try voice.say("Order a large pizza with mushrooms.", rate: 16_000)
        var heard: [String: String] = [:]
        let finished = try runLoop(seconds: 40) { loop, finish in
            let connection = SpeechHelperConnection.on(loop, helper.status)
            let stream = try #require(connection.openStream(rate: 16_000) { _ in })
            connection.append(first + then, to: stream)
            var asked = 0
            for (name, samples) in [("bounded", first.count), ("whole", nil as Int?)] {
                let fields: [(String, JSON)] = [("stream", .int(Int(stream)))] + (samples.map { [("samples", .int($0))] } ?? [])
                // `finish` closes the stream: the bounded one is asked as a partial, so that the
                // whole one can follow on the same stream.
                let operation: SpeechHelperContract.Operation = name == "whole" && op == "finish" ? .finish : .partial
                asked += 1
                _ = connection.request(timeout: 20, { id in SpeechHelperFrame(operation, id: id, fields) }) { result in
                    heard[name] = (try? result.get())?.header["text"]?.string ?? "failed: \(result)"
                    if heard.count == asked { finish() }
                }
            }
        }
        #expect(finished, "the decodes did not come")
        let bounded = WordErrorRate.words(heard["bounded"] ?? "")
        let whole = WordErrorRate.words(heard["whole"] ?? "")
        #expect(bounded.contains("kitchen") && !bounded.contains("pizza"), "bounded: \(heard)")
        #expect(whole.contains("kitchen") && whole.contains("pizza"), "whole: \(heard)")
    }
}
