import Codec
import JSON
import TestSupport

/// One manual turn on a `/v1/realtime` session whose turn detection is off: the samples appended
/// in 200 ms pieces (24 kHz), committed, and the transcript read back, with its errors against the
/// sentence said (`WordErrorRate`'s folding). The WER tests of each recogniser read turns this way.
enum CommittedTurn {
    static func append(_ samples: [Int16], on client: TestClient) throws {
        for start in stride(from: 0, to: samples.count, by: 4_800) {
            let chunk = Array(samples[start..<min(samples.count, start + 4_800)])
            try client.send(TestClient.frame(0x1, Array(#"{"type":"input_audio_buffer.append","audio":"\#(Base64.encode(PCM.littleEndianBytes(chunk)))"}"#.utf8)))
        }
    }

    /// What was heard, and how many words of `sentence` it got wrong.
    static func heard(_ samples: [Int16], saying sentence: String, on client: TestClient) throws -> (text: String, errors: Int, words: Int) {
        try append(samples, on: client)
        try client.send(TestClient.frame(0x1, Array(#"{"type":"input_audio_buffer.commit"}"#.utf8)))
        let events = try client.readEvents(until: "conversation.item.input_audio_transcription.completed").events
        let heard = events.last?["transcript"]?.string ?? ""
        let reference = WordErrorRate.words(sentence)
        return (heard, WordErrorRate.errors(reference, WordErrorRate.words(heard)), reference.count)
    }
}
