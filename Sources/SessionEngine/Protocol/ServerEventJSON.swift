import JSON

package extension ServerEvent {
    /// Whether a client of `dialect` is sent this event at all (the beta has no `conversation.item.done`).
    func isSent(in dialect: Dialect) -> Bool {
        if case .conversationItemDone = kind { return dialect == .ga }
        return true
    }

    /// Parley's own turn-taking events (`parley.response.paused` / `.resumed`): sent on /ws, whose
    /// clients are Parley's (the browser page); never on /v1/realtime, where the SDKs listen.
    var isParleyTurnTaking: Bool {
        switch kind {
        case .replyPaused, .replyResumed: true
        default: false
        }
    }

    /// The event as one JSON text, in the client's dialect.
    func json(dialect: Dialect) -> String {
        jsonValue(dialect: dialect).description
    }

    /// The event's `type` in `dialect`: the names that differ are the reply deltas and their
    /// `.done` events, GA's `conversation.item.added` for the beta's `.created`, and the beta's
    /// `transcription_session.created` / `.updated` for a transcription session's.
    func type(in dialect: Dialect) -> String {
        let ga = dialect == .ga
        switch kind {
        case .sessionCreated(let session):
            return !ga && session.configuration.type == .transcription ? "transcription_session.created" : "session.created"
        case .sessionUpdated(let session):
            return !ga && session.configuration.type == .transcription ? "transcription_session.updated" : "session.updated"
        case .speechStarted: return "input_audio_buffer.speech_started"
        case .speechStopped: return "input_audio_buffer.speech_stopped"
        case .inputAudioCommitted: return "input_audio_buffer.committed"
        case .inputAudioCleared: return "input_audio_buffer.cleared"
        case .inputAudioTimeoutTriggered: return "input_audio_buffer.timeout_triggered"
        case .conversationItemCreated: return ga ? "conversation.item.added" : "conversation.item.created"
        case .conversationItemDone: return "conversation.item.done"
        case .responseCreated: return "response.created"
        case .outputItemAdded: return "response.output_item.added"
        case .contentPartAdded: return "response.content_part.added"
        case .outputTextDelta: return ga ? "response.output_text.delta" : "response.text.delta"
        case .outputAudioDelta: return ga ? "response.output_audio.delta" : "response.audio.delta"
        case .outputAudioTranscriptDelta: return ga ? "response.output_audio_transcript.delta" : "response.audio_transcript.delta"
        case .outputTextDone: return ga ? "response.output_text.done" : "response.text.done"
        case .outputAudioDone: return ga ? "response.output_audio.done" : "response.audio.done"
        case .outputAudioTranscriptDone: return ga ? "response.output_audio_transcript.done" : "response.audio_transcript.done"
        case .contentPartDone: return "response.content_part.done"
        case .outputItemDone: return "response.output_item.done"
        case .functionCallArgumentsDelta: return "response.function_call_arguments.delta"
        case .functionCallArgumentsDone: return "response.function_call_arguments.done"
        case .responseDone: return "response.done"
        case .mcpListToolsInProgress: return "mcp_list_tools.in_progress"
        case .mcpListToolsCompleted: return "mcp_list_tools.completed"
        case .mcpListToolsFailed: return "mcp_list_tools.failed"
        case .mcpCallArgumentsDelta: return "response.mcp_call_arguments.delta"
        case .mcpCallArgumentsDone: return "response.mcp_call_arguments.done"
        case .mcpCallInProgress: return "response.mcp_call.in_progress"
        case .mcpCallCompleted: return "response.mcp_call.completed"
        case .mcpCallFailed: return "response.mcp_call.failed"
        case .inputAudioTranscriptionDelta: return "conversation.item.input_audio_transcription.delta"
        case .inputAudioTranscriptionCompleted: return "conversation.item.input_audio_transcription.completed"
        case .inputAudioTranscriptionFailed: return "conversation.item.input_audio_transcription.failed"
        case .conversationItemTruncated: return "conversation.item.truncated"
        case .conversationItemRetrieved: return "conversation.item.retrieved"
        case .conversationItemDeleted: return "conversation.item.deleted"
        case .outputAudioBufferCleared: return "output_audio_buffer.cleared"
        case .outputAudioBufferStarted: return "output_audio_buffer.started"
        case .outputAudioBufferStopped: return "output_audio_buffer.stopped"
        case .error: return "error"
        case .resumeToken: return "session.resume_token"
        case .sessionResumed: return "session.resumed"
        case .callKeyReceived: return "input_audio_buffer.dtmf_event_received"
        case .callKeySent: return "transport.dtmf.sent"
        case .callAnsweredBy: return "transport.answered_by"
        case .replyPaused: return "parley.response.paused"
        case .replyResumed: return "parley.response.resumed"
        case .turnTimeline: return "parley.turn.timeline"
        }
    }

    func jsonValue(dialect: Dialect) -> JSON {
        var members: [(String, JSON)] = [("type", .string(type(in: dialect))), ("event_id", .string(eventID))]
        switch kind {
        case .sessionCreated(let session), .sessionUpdated(let session):
            members.append(("session", session.json(dialect: dialect)))
        case .speechStarted(let ms, let itemID):
            members += [("audio_start_ms", .int(ms)), ("item_id", .string(itemID))]
        case .speechStopped(let ms, let itemID):
            members += [("audio_end_ms", .int(ms)), ("item_id", .string(itemID))]
        case .inputAudioCommitted(let itemID, let previous):
            members += [("previous_item_id", previous.map(JSON.string) ?? .null), ("item_id", .string(itemID))]
        case .inputAudioCleared:
            break
        case .inputAudioTimeoutTriggered(let start, let end, let itemID):
            members += [("audio_start_ms", .int(start)), ("audio_end_ms", .int(end)), ("item_id", .string(itemID))]
        case .conversationItemCreated(let item, let previous), .conversationItemDone(let item, let previous):
            members += [("previous_item_id", previous.map(JSON.string) ?? .null), ("item", item.json(dialect: dialect))]
        case .responseCreated(let response), .responseDone(let response):
            members.append(("response", response.json(dialect: dialect)))
        case .outputItemAdded(let responseID, let index, let item), .outputItemDone(let responseID, let index, let item):
            members += [("response_id", .string(responseID)), ("output_index", .int(index)), ("item", item.json(dialect: dialect))]
        case .functionCallArgumentsDelta(let at, let delta):
            members += at.members + [("delta", .string(delta))]
        case .functionCallArgumentsDone(let at, let name, let arguments):
            members += at.members + [("name", .string(name)), ("arguments", .string(arguments))]
        case .mcpListToolsInProgress(let itemID), .mcpListToolsCompleted(let itemID), .mcpListToolsFailed(let itemID):
            members.append(("item_id", .string(itemID)))
        case .mcpCallArgumentsDelta(let at, let delta):
            // `obfuscation` a string: the JavaScript SDK drops a delta whose obfuscation is not.
            members += [("response_id", .string(at.responseID)), ("item_id", .string(at.itemID)), ("output_index", .int(at.outputIndex)),
                        ("delta", .string(delta)), ("obfuscation", .string(""))]
        case .mcpCallArgumentsDone(let at, let arguments):
            members += [("response_id", .string(at.responseID)), ("item_id", .string(at.itemID)), ("output_index", .int(at.outputIndex)),
                        ("arguments", .string(arguments))]
        case .mcpCallInProgress(let at), .mcpCallCompleted(let at), .mcpCallFailed(let at):
            members += [("item_id", .string(at.itemID)), ("output_index", .int(at.outputIndex))]
        case .contentPartAdded(let at, let part), .contentPartDone(let at, let part):
            // The part of a content_part event is typed "text" or "audio" in both dialects (the GA
            // API's ResponseContentPartAddedEvent.Part); only an item's content says output_text.
            members += at.members + [("part", part.json(dialect: .beta))]
        case .outputTextDelta(let at, let delta), .outputAudioTranscriptDelta(let at, let delta):
            members += at.members + [("delta", .string(delta))]
        case .outputAudioDelta(let at, let audio):
            members += at.members + [("delta", .string(Base64.encode(audio)))]
        case .outputTextDone(let at, let text):
            members += at.members + [("text", .string(text))]
        case .outputAudioDone(let at):
            members += at.members
        case .outputAudioTranscriptDone(let at, let transcript):
            members += at.members + [("transcript", .string(transcript))]
        case .inputAudioTranscriptionDelta(let itemID, let index, let delta):
            members += [("item_id", .string(itemID)), ("content_index", .int(index)), ("delta", .string(delta))]
        case .inputAudioTranscriptionCompleted(let itemID, let index, let transcript, let seconds, let language):
            members += [("item_id", .string(itemID)), ("content_index", .int(index)), ("transcript", .string(transcript)),
                        ("usage", .object([("type", .string("duration")), ("seconds", .number(seconds))]))]
            if let language { members.append(("language", .string(language))) }
        case .inputAudioTranscriptionFailed(let itemID, let index, let error):
            members += [("item_id", .string(itemID)), ("content_index", .int(index)), ("error", error.json)]
        case .conversationItemTruncated(let itemID, let index, let ms):
            members += [("item_id", .string(itemID)), ("content_index", .int(index)), ("audio_end_ms", .int(ms))]
        case .conversationItemRetrieved(let item):
            members.append(("item", item.json(dialect: dialect)))
        case .conversationItemDeleted(let itemID):
            members.append(("item_id", .string(itemID)))
        case .outputAudioBufferCleared(let responseID), .outputAudioBufferStarted(let responseID), .outputAudioBufferStopped(let responseID),
             .replyPaused(let responseID):
            members.append(("response_id", .string(responseID)))
        case .replyResumed(let responseID, let reason):
            members += [("response_id", .string(responseID)), ("reason", .string(reason))]
        case .turnTimeline(let itemID, let responseID, let stages):
            members += [("item_id", .string(itemID)), ("response_id", responseID.map(JSON.string) ?? .null),
                        ("stages_ms", .object(stages.map { ($0.name, .int($0.milliseconds)) }))]
        case .error(let error):
            members.append(("error", error.json))
        case .callKeyReceived(let key, let receivedAt):
            members += [("event", .string(key)), ("received_at", .int(receivedAt))]
        case .callKeySent(let key, let clientEventID):
            members.append(("event", .string(key)))
            if let clientEventID { members.append(("client_event_id", .string(clientEventID))) }
        case .callAnsweredBy(let callID, let answer, let reason, let afterMs):
            members += [("call_id", .string(callID)), ("answered_by", .string(answer)), ("reason", .string(reason)), ("decided_after_ms", .int(afterMs))]
        case .resumeToken(let token, let graceSeconds, let lastSeq):
            members += [("token", .string(token)), ("grace_seconds", .int(graceSeconds)), ("last_seq", .int(lastSeq))]
        case .sessionResumed(let sessionID, let token, let lastSeq, let replayed):
            members += [("session_id", .string(sessionID)), ("token", .string(token)), ("last_seq", .int(lastSeq)), ("replayed", .int(replayed))]
        }
        return .object(members)
    }
}

package extension ContentLocation {
    var members: [(String, JSON)] {
        [("response_id", .string(responseID)), ("item_id", .string(itemID)), ("output_index", .int(outputIndex)), ("content_index", .int(contentIndex))]
    }
}

package extension FunctionCallLocation {
    var members: [(String, JSON)] {
        [("response_id", .string(responseID)), ("item_id", .string(itemID)), ("output_index", .int(outputIndex)), ("call_id", .string(callID))]
    }
}
