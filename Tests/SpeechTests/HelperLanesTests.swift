import JSON
import Models
import Speech
import Testing
import TestSupport
import Loop
#if canImport(Glibc)
import Glibc
import SpeechContracts
#endif

/// Decodes and syntheses share the helper's workers, served by what is waited on most
/// (parley_speech.py's `FairQueue` lanes): a turn's final text, then a reply's first sentence, then
/// the decode at a quiet, then the sentences made ahead of a listener. A synthesis steps aside
/// between its clauses for a final text waiting.
@Suite(.serialized) struct HelperLanesTests {
    typealias Client = SpeechHelperContractTests.Client

    /// One worker for decodes and syntheses together, and none kept for the work a user waits on:
    /// what waits is in its lanes.
    static let oneWorker = RunningSpeechHelper(["--whisper", ".venv-speech/whisper-tiny.en", "--piper", ".venv-speech/voice-int8/en_US-joe-medium-int8.ort",
                                                "--waited-workers", "0"], workers: 1)

    /// One worker, and one more for the work a user waits on now (the default's one).
    static let oneWorkerOneWaited = RunningSpeechHelper(["--whisper", ".venv-speech/whisper-tiny.en",
                                                         "--piper", ".venv-speech/voice-int8/en_US-joe-medium-int8.ort"], workers: 1)

    static let long = (1...12).map { "clause number \($0) of the first reply," }.joined(separator: " ") + " and its end."

    /// A long first sentence holds the one worker (its first clause has come back); behind it wait a later sentence (`ahead`), a decode at
    /// a quiet, another reply's first sentence and a final text, asked in that order. The final text
    /// is answered first (the long sentence stepping aside after a clause), the long sentence ends
    /// before the other first sentence starts (it keeps its place in its lane), and the rest come in
    /// their lanes' order: first sentence, quiet, ahead. Asked for at once, first come first served
    /// would answer them as asked; with a queue per kind, the later sentence would start beside the
    /// long one.
    @Test func workIsServedByWhatIsWaitedOnAndASynthesisStepsAsideForAFinalText() throws {
        let helper = try #require(Self.oneWorker, "the speech helper did not start")
        var client = try SpeechHelperContractTests.streaming(helper.status.socketPath, stream: 1, seconds: 2)
        defer { client.close() }
        client.send(SpeechHelperFrame(.open, id: 2, [("rate", .int(16_000))]),
                    SpeechHelperFrame(.append, id: 2, payload: PCMBytes.of(SpeechHelperContractTests.audio(seconds: 2)[...])))
        client.send(SpeechHelperFrame(.speak, id: 40, [("text", .string(Self.long)), ("speed", .number(1))]))
        // Its first clause has come: the long sentence holds the worker (eleven clauses to go).
        _ = try #require(try client.answer(40), "the long sentence did not start")
        client.send(SpeechHelperFrame(.speak, id: 41, [("text", .string("A later sentence.")), ("speed", .number(1)), ("ahead", .bool(true))]),
                    SpeechHelperFrame(.partial, id: 42, [("stream", .int(1))]),
                    SpeechHelperFrame(.speak, id: 43, [("text", .string("Another first sentence.")), ("speed", .number(1))]),
                    SpeechHelperFrame(.finish, id: 44, [("stream", .int(2))]))
        let frames = try client.frames(untilDone: 41)
        func first(_ id: Int) -> Int? { frames.firstIndex { $0.header["id"]?.int == id } }
        func done(_ id: Int) -> Int? { frames.firstIndex { $0.header["id"]?.int == id && $0.header["done"]?.bool == true } }
        let order = frames.compactMap { frame in frame.header["id"]?.int.map { "\($0)\(frame.header["done"]?.bool == true ? " done" : "")" } }
        #expect(frames.allSatisfy { $0.header["error"] == nil }, "\(frames.map(\.header))")
        let (longDone, final, other, quiet, ahead) = (try #require(done(40)), try #require(first(44)), try #require(first(43)),
                                                      try #require(first(42)), try #require(first(41)))
        #expect(final < longDone, "the final text did not come between the long sentence's clauses: \(order)")
        #expect(longDone < other && other < quiet && quiet < ahead, "served out of their lanes' order: \(order)")
    }

    /// A request that need not be made if it has not begun (`cancel` with `queued`): a decode
    /// queued behind a sentence on the one worker is answered `overloaded` at once and never runs;
    /// the sentence, begun (its first clause has come), goes on to its end all the same.
    @Test func aQueuedDecodeSupersededIsAnsweredAtOnceAndABegunRequestGoesOn() throws {
        let helper = try #require(Self.oneWorker, "the speech helper did not start")
        var client = try SpeechHelperContractTests.streaming(helper.status.socketPath, stream: 1, seconds: 2)
        defer { client.close() }
        client.send(SpeechHelperFrame(.speak, id: 60, [("text", .string(Self.long)), ("speed", .number(1))]))
        _ = try #require(try client.answer(60), "the sentence did not start")
        client.send(SpeechHelperFrame(.partial, id: 61, [("stream", .int(1))]))
        client.send(SpeechHelperFrame(.cancel, id: 61, [("queued", .bool(true))]), SpeechHelperFrame(.cancel, id: 60, [("queued", .bool(true))]))
        let superseded = try #require(try client.answer(61), "the superseded decode was not answered")
        #expect(superseded.header["error"]?.string == SpeechHelperContract.ErrorCode.overloaded.rawValue, "\(superseded.header)")
        let frames = try client.frames(untilDone: 60)
        #expect(frames.contains { $0.header["id"]?.int == 60 && $0.header["done"]?.bool == true }, "the begun sentence did not end")
        #expect(frames.allSatisfy { $0.header["error"] == nil }, "\(frames.map(\.header))")
        client.send(SpeechHelperFrame(.stats, id: 62))
        #expect(try client.answer(62)?.header["superseded"]?.int == 1)
    }
}

extension HelperLanesTests {
    /// A decode at a quiet holds the one worker (the helper says it runs) and cannot stop; a first
    /// sentence asked for then is spoken by the worker kept for what a user waits on, and has
    /// ended before the decode (a whole window, hundreds of ms) answers. Without that worker it
    /// would start only after the decode.
    @Test func aFirstSentenceDoesNotWaitForADecodeAtAQuiet() throws {
        let helper = try #require(Self.oneWorkerOneWaited, "the speech helper did not start")
        var client = try SpeechHelperContractTests.streaming(helper.status.socketPath, stream: 1, seconds: 8)
        defer { client.close() }
        client.send(SpeechHelperFrame(.partial, id: 70, [("stream", .int(1))]))
        var running = false
        for id in 100..<200 where !running {
            client.send(SpeechHelperFrame(.stats, id: UInt64(id)))
            running = try #require(try client.answer(id), "no stats").header["running"]?.int == 1
        }
        try #require(running, "the decode never ran")
        client.send(SpeechHelperFrame(.speak, id: 71, [("text", .string("Yes.")), ("speed", .number(1))]))
        let frames = try client.frames(untilDone: 71)
        let order = frames.compactMap { $0.header["id"]?.int }
        #expect(!order.contains(70), "the decode answered before the first sentence ended: \(order)")
        _ = try #require(try client.answer(70), "the decode was not answered")
    }
}

extension SpeechHelperContractTests.Client {
    /// Every frame until the one saying `id` is done, in the order they came (with those read before).
    mutating func frames(untilDone id: Int) throws -> [SpeechHelperFrame] {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while !early.contains(where: { $0.header["id"]?.int == id && $0.header["done"]?.bool == true }) {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { break }
            early += try buffer[..<n].withUnsafeBytes { try reader.read($0) }
        }
        defer { early = [] }
        return early
    }
}
