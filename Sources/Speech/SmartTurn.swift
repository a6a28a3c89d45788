import JSON
import Loop
import Models

/// Smart Turn v3.2 (BSD-2-Clause; pipecat-ai's smart-turn-v3.2-cpu.onnx) as Parley's end-of-turn
/// model, run by the speech helper: the turn's last 8 s go out as pcm16, the helper computes
/// Whisper's log-mel features and runs the model with ONNX Runtime, and answers with the
/// probability that the speaker has finished (complete above 0.5, the model's own threshold).
///
/// Measured on this machine (docs/benchmarks.md, "Turn-taking"): about 30 ms a decision on one
/// thread; the helper runs two side by side.
public struct SmartTurn: EndOfTurnModel {
    public let name = "smart-turn-v3.2"
    let status: SpeechHelperStatus
    /// Past this the turn is judged by silence instead: a late verdict would end the turn later
    /// than the silence rule it was meant to beat.
    let timeoutSeconds: Double

    /// The model reads 8 s; more would only cost the copy.
    public static let maxSeconds = 8

    public init(helper status: SpeechHelperStatus, timeoutSeconds: Double = 0.5) {
        self.status = status
        self.timeoutSeconds = timeoutSeconds
    }

    public func judge(_ samples: ArraySlice<Int16>, sampleRate: Int, on loop: EventLoop,
                      _ answer: @escaping (Result<TurnVerdict, ModelError>) -> Void) -> any ModelCall {
        let connection = SpeechHelperConnection.on(loop, status)
        let audio = samples.suffix(Self.maxSeconds * sampleRate)
        let id = connection.request(timeout: timeoutSeconds, { id in
            SpeechHelperFrame.encoded(header: .object([("op", .string("turn")), ("id", .int(Int(id))), ("rate", .int(sampleRate))]), samples: audio)
        }) { result in
            answer(result.flatMap { frame in
                guard let complete = frame.header["complete"]?.bool, let probability = frame.header["probability"]?.double else {
                    return .failure(ModelError(code: "speech_helper_error", message: "a turn answer without complete and probability"))
                }
                return .success(TurnVerdict(complete: complete, probability: probability))
            })
        }
        return SpeechHelperCall(connection: connection, id: id)
    }
}
