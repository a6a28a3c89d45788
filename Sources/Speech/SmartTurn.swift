import Codec
import JSON
import Loop
import Models
import SpeechContracts

/// Smart Turn v3.2 (BSD-2-Clause; pipecat-ai's smart-turn-v3.2-cpu.onnx) as Parley's end-of-turn
/// model, run by the speech helper: the helper reads the turn's last 8 s (from the turn's stream,
/// which Whisper's transcription has already sent it and names as its `heldAudio`, or sent with
/// the question when there is no stream), computes Whisper's log-mel features and runs the model with ONNX Runtime, and answers
/// with the probability that the speaker has finished (complete above 0.5, the model's own threshold).
///
/// Measured on this machine (docs/benchmarks.md, "Turn-taking"): about 30 ms a decision on one
/// thread; the helper runs two side by side.
public struct SmartTurn: EndOfTurnModel {
    public let name = "smart-turn-v3.2"
    let status: SpeechHelperStatus
    /// Past this the turn is judged by silence instead: a late verdict would end the turn later
    /// than the silence rule it was meant to beat.
    let timeoutSeconds: Double

    public init(helper status: SpeechHelperStatus, timeoutSeconds: Double = 0.5) {
        self.status = status
        self.timeoutSeconds = timeoutSeconds
    }

    public func judge(_ turn: TurnAudio, on loop: EventLoop,
                      _ answer: @escaping (Result<TurnVerdict, ModelError>) -> Void) -> any ModelCall {
        let connection = SpeechHelperConnection.on(loop, status)
        let sampleRate = turn.sampleRate
        // The turn's stream, when its recogniser holds it on this connection: a name, not 256 KB again.
        let stream = turn.held.flatMap { connection.stream($0, rate: sampleRate) }
        let audio = stream == nil ? Array(turn.samples.suffix(SpeechHelperContract.turnSeconds * sampleRate)) : []
        let id = connection.request(timeout: timeoutSeconds, { id in
            if let stream { return SpeechHelperFrame(.turn, id: id, [("stream", .int(Int(stream)))]) }
            return SpeechHelperFrame(.turn, id: id, [("rate", .int(sampleRate))], payload: PCM.littleEndianBytes(audio))
        }) { result in
            answer(result.flatMap { frame in
                guard let complete = frame.header["complete"]?.bool, let probability = frame.header["probability"]?.double else {
                    return .failure(ModelError(speechHelper: .refused(.failed), message: "a turn answer without complete and probability"))
                }
                return .success(TurnVerdict(complete: complete, probability: probability))
            })
        }
        return SpeechHelperCall(connection: connection, id: id)
    }
}
