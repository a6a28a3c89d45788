/// An event the server sends: what the session engine emits and the connection writes as JSON in
/// the client's dialect (`json(dialect:)`).
public struct ServerEvent: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        case sessionCreated(SessionInfo)
        case sessionUpdated(SessionInfo)
        /// `audioStartMs`: audio since the session's first sample, less the prefix padding.
        case speechStarted(audioStartMs: Int, itemID: String)
        case speechStopped(audioEndMs: Int, itemID: String)
        case inputAudioCommitted(itemID: String, previousItemID: String?)
        case inputAudioCleared
        /// Server VAD's `idle_timeout_ms` passed with the user silent: the silence is the next turn.
        case inputAudioTimeoutTriggered(audioStartMs: Int, audioEndMs: Int, itemID: String)
        /// GA `conversation.item.added`, beta `conversation.item.created`.
        case conversationItemCreated(ConversationItem, previousItemID: String?)
        /// GA only (`conversation.item.done`): the item is complete. Beta clients are not sent it.
        case conversationItemDone(ConversationItem, previousItemID: String?)
        case responseCreated(RealtimeResponse)
        case outputItemAdded(responseID: String, outputIndex: Int, item: ConversationItem)
        case contentPartAdded(ContentLocation, part: ConversationItem.Content)
        /// A piece of a text reply (GA `response.output_text.delta`, beta `response.text.delta`).
        case outputTextDelta(ContentLocation, delta: String)
        /// A piece of a spoken reply, base64 in the output format (GA `response.output_audio.delta`,
        /// beta `response.audio.delta`).
        /// The reply's audio bytes, base64 in the event's JSON.
        case outputAudioDelta(ContentLocation, audio: [UInt8])
        /// A piece of a spoken reply's transcript (GA `response.output_audio_transcript.delta`,
        /// beta `response.audio_transcript.delta`).
        case outputAudioTranscriptDelta(ContentLocation, delta: String)
        case outputTextDone(ContentLocation, text: String)
        case outputAudioDone(ContentLocation)
        case outputAudioTranscriptDone(ContentLocation, transcript: String)
        case contentPartDone(ContentLocation, part: ConversationItem.Content)
        case outputItemDone(responseID: String, outputIndex: Int, item: ConversationItem)
        /// A piece of a function call's arguments as the model writes them.
        case functionCallArgumentsDelta(FunctionCallLocation, delta: String)
        /// The call's arguments, whole.
        case functionCallArgumentsDone(FunctionCallLocation, name: String, arguments: String)
        case responseDone(RealtimeResponse)
        /// An MCP server's tools are being listed into the item `itemID` (`mcp_list_tools`).
        case mcpListToolsInProgress(itemID: String)
        case mcpListToolsCompleted(itemID: String)
        case mcpListToolsFailed(itemID: String)
        /// A piece of an MCP call's arguments as the model writes them.
        case mcpCallArgumentsDelta(MCPCallLocation, delta: String)
        case mcpCallArgumentsDone(MCPCallLocation, arguments: String)
        /// The server is calling the tool; then it completed, or failed (the item says why).
        case mcpCallInProgress(MCPCallLocation)
        case mcpCallCompleted(MCPCallLocation)
        case mcpCallFailed(MCPCallLocation)
        /// What the recogniser has added to a spoken turn's transcript while the user speaks.
        case inputAudioTranscriptionDelta(itemID: String, contentIndex: Int, delta: String)
        /// The turn's words, and how long it was spoken for: the usage the Realtime API reports
        /// for a transcription billed by duration (the SDKs require a `usage`).
        /// `language`: Parley's extension, the turn's language when the session set one or the
        /// recogniser found one (`SessionConfiguration.language`); left out otherwise.
        case inputAudioTranscriptionCompleted(itemID: String, contentIndex: Int, transcript: String, audioSeconds: Double, language: String? = nil)
        case inputAudioTranscriptionFailed(itemID: String, contentIndex: Int, error: EventError)
        /// A spoken reply cut short (barge-in, cancel): the audio the client had been sent time
        /// to play, so it can drop the rest; the item's transcript stays whole.
        case conversationItemTruncated(itemID: String, contentIndex: Int, audioEndMs: Int)
        case conversationItemRetrieved(ConversationItem)
        case conversationItemDeleted(itemID: String)
        /// The spoken reply was cut off at the client's `output_audio_buffer.clear`.
        case outputAudioBufferCleared(responseID: String)
        /// WebRTC's: a reply's first audio went out on the call's media track.
        case outputAudioBufferStarted(responseID: String)
        /// WebRTC's: a reply's audio has all gone out (after its `response.done`).
        case outputAudioBufferStopped(responseID: String)
        case error(EventError)
        /// A key the caller pressed on a phone call (`input_audio_buffer.dtmf_event_received`, as
        /// OpenAI's SIP calls send it; `receivedAt` in Unix seconds).
        case callKeyReceived(key: String, receivedAt: Int)
        /// A key pressed on the call at a sideband's asking (`transport.dtmf.sent`).
        case callKeySent(key: String, clientEventID: String?)
        /// Who answered a call Parley placed (`transport.answered_by`).
        case callAnsweredBy(callID: String, answer: String, reason: String, decidedAfterMs: Int)
        /// Parley's, to a client that asked for resume (docs/protocol.md, "Resume"): the token to
        /// reconnect with, and how long the session waits for it.
        case resumeToken(token: String, graceSeconds: Int, lastSeq: Int)
        /// Parley's: the session is back; the events after `lastSeq` the client named follow.
        case sessionResumed(sessionID: String, token: String, lastSeq: Int, replayed: Int)
        /// Parley's, on /ws only: the user's speech paused the spoken reply (not yet a barge-in).
        case replyPaused(responseID: String)
        /// Parley's, on /ws only: the paused reply goes on; `reason` is `backchannel` or `short`.
        case replyResumed(responseID: String, reason: String)
        /// Parley's, only to a session that asked (`include: ["parley.turn.timeline"]`): where the
        /// last turn's time went, stage by stage, in milliseconds (see `TurnTimeline`).
        case turnTimeline(itemID: String, responseID: String?, stages: [TurnStage])
    }

    /// Fresh for every event, as in the Realtime API.
    public var eventID: String
    public var kind: Kind

    public init(eventID: String, _ kind: Kind) {
        self.eventID = eventID
        self.kind = kind
    }
}

/// Where a delta goes: which response, item and content part.
public struct ContentLocation: Sendable, Equatable {
    public var responseID: String
    public var itemID: String
    public var outputIndex: Int
    public var contentIndex: Int

    public init(responseID: String, itemID: String, outputIndex: Int = 0, contentIndex: Int = 0) {
        self.responseID = responseID
        self.itemID = itemID
        self.outputIndex = outputIndex
        self.contentIndex = contentIndex
    }
}

/// Which call a function-call event is about: its response, item, place in the output, and id.
public struct FunctionCallLocation: Sendable, Equatable {
    public var responseID: String
    public var itemID: String
    public var outputIndex: Int
    public var callID: String

    public init(responseID: String, itemID: String, outputIndex: Int, callID: String) {
        self.responseID = responseID
        self.itemID = itemID
        self.outputIndex = outputIndex
        self.callID = callID
    }
}

/// Which MCP call an `mcp_call` event is about: its response, item and place in the output.
public struct MCPCallLocation: Sendable, Equatable {
    public var responseID: String
    public var itemID: String
    public var outputIndex: Int

    public init(responseID: String, itemID: String, outputIndex: Int) {
        self.responseID = responseID
        self.itemID = itemID
        self.outputIndex = outputIndex
    }
}
