import Loop
import Models
import SpeechContracts

/// Audio the application made (a GPT-Live fixture), spoken through a reply's `SpeechOutput` as a
/// synthesiser's audio is, so that it reaches every carrier the way a reply does: paced, in the
/// session's output format, heard by the echo guard and the recording. Whatever text it is asked
/// to say, it says these samples once, in pieces of `pieceSeconds` (the output encodes a piece
/// at a time on the speech workers, so the first leaves before the rest is encoded), then finishes:
/// on the loop's next turn, never inside `speak`, as a synthesiser answers.
struct FixedAudio: Synthesizer {
    let samples: [Int16]
    let rate: Int
    var name: String { "fixture" }
    static let pieceSeconds = 2

    func speak(_ text: String, voice: SpeechVoice, urgency: SynthesisUrgency, on loop: EventLoop, _ onEvent: @escaping (SynthesisEvent) -> Void) -> any ModelCall {
        let samples = samples, rate = rate
        return Scheduled(loop.schedule(after: 0) {
            let piece = rate * Self.pieceSeconds
            var start = 0
            while start < samples.count {
                let end = min(start + piece, samples.count)
                onEvent(.audio(Array(samples[start..<end]), sampleRate: rate))
                start = end
            }
            onEvent(.finished)
        })
    }

    private final class Scheduled: ModelCall {
        let task: ScheduledTask
        init(_ task: ScheduledTask) { self.task = task }
        func cancel() { task.cancel() }
    }
}
