import Models

/// What happened in a session, said once, in the server's own words: the vocabulary the session's
/// observers (metrics, the turn's timing, the report, the trace, the recording, the tenant's
/// ledger) read. The wire's events are for clients and are encoded only by the two wire dialects;
/// a fact no client asked for (a backchannel ignored, a turn's cause) needs no event, and a
/// new observer reads facts without learning the wire.
///
/// The engine emits them as `SessionAction.fact`, in the order things happen, beside the events
/// it sends; the driver hands each to every observer.
public enum SessionFact: Sendable, Equatable {
    /// The session's settings are new (it began, or `session.update` changed them).
    case settingsChanged
    /// A user turn is in the conversation: a spoken one committed (its words follow as
    /// `transcript`), or typed `text`.
    case userItem(itemID: String, text: String?)
    /// The recogniser's final words for a spoken turn.
    case transcript(itemID: String, text: String)
    /// The user's speech is a turn the client has been told of (`speech_started`).
    case turnBegan(itemID: String, audioStartMs: Int)
    /// The turn is over (`speech_stopped`): where its speech ended, and why it was over.
    case turnEnded(itemID: String, audioEndMs: Int, cause: TurnEnding.Cause)
    /// The user spoke again after their turn had ended, before any of its reply was heard: the
    /// reply was withdrawn and the turn reopened as `itemID`, the withdrawn item's audio its start.
    case turnReopened(itemID: String, withdrawnItemID: String)
    /// User speech paused the spoken reply; not yet known to be a barge-in.
    case replyPaused(responseID: String)
    /// The paused reply goes on: the speech was only a backchannel, or short.
    case replyResumed(responseID: String, ReplyInterruption.Resumption)
    /// The user spoke over the reply and it was cancelled (a barge-in).
    case bargedIn(responseID: String)
    /// The listener heard `audioEndMs` of the reply item before it was cut (a barge-in, or the
    /// client's truncation).
    case replyCut(itemID: String, audioEndMs: Int)
    /// A response began; `itemID` is its message's, should it say something.
    case responseBegan(responseID: String, itemID: String)
    /// A response ended: its status, output and usage, as `response.done` reports them.
    case responseEnded(RealtimeResponse)
    /// The model's call is the client's to run now (its arguments are complete).
    case toolCalled(responseID: String, callID: String, name: String, arguments: String)
    /// The client gave the call's output back.
    case toolReturned(callID: String)
    /// The client was sent an error.
    case error(EventError)
    /// Truncation dropped this many items from the conversation.
    case historyTruncated(items: Int)

    // The driver's own, from what it carries out.

    /// `milliseconds` more of the reply's audio went to the listener.
    case replyAudio(milliseconds: Int)
    /// The turn's stages, from its last word to its reply's first frame (`TurnTimeline`).
    case turnTimed(itemID: String, responseID: String?, stages: [TurnStage])
    /// The session went on on a new connection (a resume).
    case sessionResumed
    /// An MCP server's tools were listed (`tools` of them), or not (`error`: the error's type).
    case mcpListed(serverLabel: String, tools: Int, error: String?)
    /// The server began calling an MCP tool for a response.
    case mcpCallBegan(responseID: String, itemID: String, serverLabel: String, tool: String)
    /// The call ended: answered (`error` nil), or failed with an error of that type.
    case mcpCallEnded(responseID: String, itemID: String, error: String?)
    /// The client answered an approval request.
    case mcpApproval(requestID: String, approved: Bool)
    /// A tool ran long and the agent said its filler (`ToolFiller`) in this response.
    case fillerSaid(responseID: String)
    /// Who answered the call Parley placed (`AnsweringMachineDetector`), from its carrier.
    case answeredBy(AnsweringMachineDetector.Verdict)
}
