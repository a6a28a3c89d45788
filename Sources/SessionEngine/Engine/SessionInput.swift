import Models
import MCP
import SpeechContracts
/// What drives a session engine: the client's events, its audio, and the model's output.
public enum SessionInput: Sendable, Equatable {
    /// A parsed client event. `input_audio_buffer.append` is not one of these (see
    /// `ClientMessage`): the caller decodes and resamples its audio and passes `.audio`.
    case client(ClientEvent)
    /// A client event that failed to parse: the engine answers with an `error` event.
    case invalidClientEvent(ProtocolError)
    /// The user's audio, mono at the engine's `inputSampleRate`: 16 kHz, decoded (Opus) or
    /// resampled (pcm16 at 24 kHz), or 8 kHz decoded from G.711.
    case audio([Int16])
    /// The client's audio has stopped for a while (the driver's 2 s idle check): the neural VAD's
    /// stream goes back to its pool, and a turn the end-of-turn model held open ends.
    case audioStopped
    /// The input's line was found noisy (`LineNoiseFloor`): a turn's end then leans less on the
    /// audio model and the words, both of which noise misleads (`TurnEnding.Settings.noisyInput`).
    case lineNoisy
    /// The loop's batch of neural VAD windows has scored this session's (`Options.batchesVoiceActivity`):
    /// their speech starts and stops now, as if heard with their audio.
    case voiceActivityScored
    /// A piece of the model's reply.
    case modelDelta(responseID: String, text: String)
    /// The model began calling a function: `index` is the call's place among this reply's calls.
    case modelToolCallStarted(responseID: String, index: Int, callID: String, name: String)
    /// A piece of that call's arguments (JSON text).
    case modelToolCallArguments(responseID: String, index: Int, delta: String)
    /// The model finished; `usage` as it reported it, or nil to have the engine estimate it. A
    /// `.length` stop ends the response `incomplete` (`max_output_tokens`).
    case modelFinished(responseID: String, usage: Usage?, reason: FinishReason = .stop)
    /// The recogniser's word on a spoken turn (see `SessionAction.transcription`).
    case transcription(itemID: String, TranscriptionEvent)
    /// The end-of-turn model's answer (see `SessionAction.turnModel`): a failure lets the silence
    /// rule decide the turn.
    case turnVerdict(itemID: String, Result<TurnVerdict, ModelError>)
    /// How the reply's speech went (see `SessionAction.speech`).
    case speechOutput(responseID: String, SpeechOutputEvent)
    /// An MCP server's tools, listed into the `mcp_list_tools` item `itemID`, or why they could not be.
    case mcpToolsListed(itemID: String, Result<[MCPTool], MCPError>)
    /// The MCP call `itemID` ran: the tool's output, or why it failed.
    case mcpToolCalled(itemID: String, Result<MCPToolOutput, MCPError>)
    /// The filler timer `token` (`SessionAction.toolWait`) ran out.
    case toolWaitElapsed(token: Int)
    /// The model call failed (network, upstream error): the response fails, the session goes on.
    case modelFailed(responseID: String, code: String, message: String)
}
