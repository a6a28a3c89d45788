import JSON
import Models

/// What the client asks of the session: its settings, the input buffer, items and responses.
package extension SessionEngine {
    // MARK: Client events

    /// A client event: settings, the input buffer, items, responses.
    mutating func handle(_ event: ClientEvent) {
        switch event.kind {
        case .sessionUpdate(let update):
            for (setting, given, param) in [(Pinned.instructions, update.instructions != nil, "session.instructions"),
                                            (.tools, update.tools != nil || update.toolChoice != nil, "session.tools"),
                                            (.voice, update.voice != nil, "session.voice")] where given && pinned.contains(setting) {
                return emit(.error(EventError(ProtocolError(.invalidValue, "'\(param)' is fixed by the client secret this session was opened with",
                                                           param: param, eventID: event.eventID))))
            }
            if update.recording == true, !records {
                return emitError(.invalidRequest, "recording_not_allowed",
                                 "this server does not record sessions ('session.recording'): its operator starts it with --recordings DIR to allow it", event)
            }
            if let servers = update.mcpServers, let refused = refusedServer(servers) {
                return emit(.error(notAllowed(refused, param: "session.tools", event)))
            }
            if let bytes = update.maxHistoryBytes, bytes > Int(maxHistoryBytes) {
                return emitError(.invalidRequest, "invalid_value",
                                 "'session.max_history_bytes' may be at most \(maxHistoryBytes), this server's history budget (--max-history-bytes)", event)
            }
            do {
                try settings.value.apply(update, allowsOpus: allowsOpus)
                settings.settle()
            } catch {
                var error = error
                error.eventID = event.eventID
                emit(.error(EventError(error)))
                return
            }
            // The reply begun may no longer be the one these settings would ask for (tools, voice).
            dropSpeculation(.restarted)
            if items.isHeld { conversation.setBudget(historyBudget) }
            inputRateChanged()
            turnDetectionChanged()
            emit(.sessionUpdated(sessionInfo))
            fact(.settingsChanged)
            if let servers = update.mcpServers { listServers(servers, forSession: true) }
        case .inputAudioCommit:
            guard audio.pendingSamples > 0 else {
                emitError(.invalidRequest, "input_audio_buffer_commit_empty", "the input audio buffer is empty: append audio before committing it", event)
                return
            }
            // The client wants the speech as a turn: a pause it caused becomes a barge-in.
            if turns.floor.isPaused { bargeIn() }
            dropSpeculation(.cancelled)
            if !turns.floor.isIdle, let (turn, withdraw) = turns.floor.take() {
                if let withdraw { carryOut(withdraw) }
                vad?.endSpeech()
                commit(itemID: turn.itemID, spokenMs: audio.totalMs - turn.onsetMs)
            } else if configuration.turnDetection != nil {
                // Between turns server VAD keeps only the padding for the next one: silence, not a turn.
                emitError(.invalidRequest, "input_audio_buffer_commit_empty",
                          "no speech since the last commit: server VAD has heard no turn to commit", event)
            } else {
                commit(itemID: ids.make("item"), spokenMs: audio.pendingMs)
            }
        case .inputAudioClear:
            audio.clear()
            emit(.inputAudioCleared)
            cancelTranscription()
            dropSpeculation(.cancelled)
            if !turns.floor.isIdle, dropTurn() {
                vad?.endSpeech()
                // A waiting turn deferred to the cleared one's end is answered now.
                answerWaitingTurn()
            }
        case .conversationItemCreate(let new):
            createItem(new, event)
        case .responseCreate(let overrides):
            guard configuration.type == .realtime else {
                return emitError(.invalidRequest, "invalid_session_type",
                                 "response.create is not available in a transcription session: it transcribes the audio it hears and never responds (open a realtime session for responses)", event)
            }
            if overrides.tools != nil || overrides.toolChoice != nil {
                let tools = overrides.tools.map { $0.tools.isEmpty ? nil : $0 } ?? configuration.tools
                do {
                    try ToolsField.check(overrides.toolChoice ?? configuration.toolChoice, against: tools,
                                         servers: overrides.mcpServers ?? configuration.mcpServers, param: "response.tool_choice")
                } catch {
                    var error = error
                    error.eventID = event.eventID
                    return emit(.error(EventError(error)))
                }
            }
            if let servers = overrides.mcpServers, let refused = refusedServer(servers) {
                return emit(.error(notAllowed(refused, param: "response.tools", event)))
            }
            if let response = turns.response, response.isFiller, turns.deferredResponse == nil {
                // A filler is being said while the client's function ran: its reply follows it.
                turns.deferredResponse = overrides
                return
            }
            if let response = turns.response {
                emitError(.invalidRequest, "conversation_already_has_active_response",
                          "the conversation already has an active response in progress: \(response.id); cancel it or wait for response.done", event)
                return
            }
            startResponse(overrides)
        case .responseCancel(let id):
            guard let response = turns.response, id == nil || id == response.id else {
                let message = id.map { "response \($0) is not in progress" } ?? "there is no response in progress to cancel"
                emitError(.invalidRequest, "response_cancel_not_active", message, event)
                return
            }
            cancel(response.id, reason: "client_cancelled")
        case .conversationItemRetrieve(let itemID):
            if let item = mcp.value.item(itemID) { return emit(.conversationItemRetrieved(item)) }
            guard let entry = conversation.entry(itemID) else { return itemNotFound(itemID, event) }
            emit(.conversationItemRetrieved(Self.item(entry)))
        case .conversationItemDelete(let itemID):
            if let response = turns.response, response.itemID == itemID || response.calls.contains(where: { $0.itemID == itemID }) {
                return emitError(.invalidRequest, "invalid_value", "item '\(itemID)' belongs to the response in progress; cancel it first", event)
            }
            // An mcp_call is two messages for the model, its call (under an id of its own that no
            // client was told) and its output (under the item's id): both go.
            let hiddenCall = mcp.value.item(itemID)?.mcp.flatMap { if case .call = $0 { conversation.previousID(of: itemID) } else { nil } }
            guard conversation.delete(itemID) else { return itemNotFound(itemID, event) }
            if let hiddenCall { _ = conversation.delete(hiddenCall) }
            emit(.conversationItemDeleted(itemID: itemID))
        case .outputAudioBufferClear:
            // The Realtime API has the client cancel first; a spoken reply still running is cut
            // off here all the same (its speech stops, the history keeps what was heard).
            let id = turns.response?.id ?? lastResponseID ?? ""
            if let response = turns.response, response.speaks { cancel(response.id, reason: "client_cancelled") }
            emit(.outputAudioBufferCleared(responseID: id))
        case .conversationItemTruncate(let itemID, let contentIndex, let audioEndMs):
            truncate(itemID, contentIndex: contentIndex, audioEndMs: audioEndMs, event)
        }
    }

    mutating func itemNotFound(_ itemID: String, _ event: ClientEvent) {
        emitError(.invalidRequest, "item_not_found", "item '\(itemID)' is not in the conversation", event)
    }

    /// The client played only `audioEndMs` of a spoken reply (it was interrupted): the history keeps
    /// the part of the transcript that was heard, in proportion to the audio played when the
    /// reply's length is known, cut back to a word, so the model does not "remember" saying the rest.
    mutating func truncate(_ itemID: String, contentIndex: Int, audioEndMs: Int, _ event: ClientEvent) {
        guard let entry = conversation.entry(itemID) else { return itemNotFound(itemID, event) }
        guard entry.message.role == .assistant, entry.audio else {
            return emitError(.invalidRequest, "invalid_value", "item '\(itemID)' holds no assistant audio to truncate", event)
        }
        guard contentIndex == 0 else {
            return emitError(.invalidRequest, "invalid_value", "'content_index' must be 0: a reply has one audio part", event)
        }
        if let spoken = lastSpokenReply, spoken.itemID == itemID {
            guard audioEndMs <= spoken.audioMs else {
                return emitError(.invalidRequest, "invalid_value", "'audio_end_ms' \(audioEndMs) is past the item's audio (\(spoken.audioMs) ms)", event)
            }
            let text = entry.message.text
            let keep = spoken.audioMs == 0 ? 0 : text.count * audioEndMs / spoken.audioMs
            conversation.setText(Self.wordPrefix(of: text, characters: keep), of: itemID)
        }
        emit(.conversationItemTruncated(itemID: itemID, contentIndex: contentIndex, audioEndMs: audioEndMs))
        fact(.replyCut(itemID: itemID, audioEndMs: audioEndMs))
    }

    /// The first `characters` of `text`, cut back to the end of a word (all of it when it fits).
    static func wordPrefix(of text: String, characters: Int) -> String {
        guard characters < text.count else { return text }
        let cut = text.prefix(max(0, characters))
        guard let space = cut.lastIndex(where: { $0 == " " || $0 == "\n" }) else { return "" }
        return String(cut[..<space])
    }

    /// An item of the history as the Realtime API shows it.
    static func item(_ entry: ConversationHistory.Entry) -> ConversationItem {
        let message = entry.message
        if let call = message.toolCalls.first {
            return ConversationItem(id: entry.id, role: .assistant, status: .completed, content: [],
                                    function: .call(callID: call.id, name: call.name, arguments: call.arguments))
        }
        if message.role == .tool, let callID = message.toolCallID {
            return ConversationItem(id: entry.id, role: .tool, status: .completed, content: [], function: .output(callID: callID, output: message.text))
        }
        let content: ConversationItem.Content = switch (message.role, entry.audio) {
        case (.assistant, true): .outputAudio(transcript: message.text)
        case (.assistant, false): .outputText(message.text)
        case (_, true): .inputAudio(transcript: message.spokenMilliseconds == nil ? message.text : nil)
        case (_, false): .inputText(message.text)
        }
        return ConversationItem(id: entry.id, role: message.role, status: .completed, content: [content])
    }

    /// The input format changed to one heard at another rate (G.711 at 8 kHz, pcm16 and Opus at
    /// 16 kHz): the audio buffered at the old rate is dropped and a turn in progress forgotten, as
    /// `input_audio_buffer.clear` would (without its event: the client changed what it sends), and
    /// the detector starts over at the new rate.
    mutating func inputRateChanged() {
        let rate = configuration.inputAudioFormat.engineRate
        guard rate != audio.sampleRate else { return }
        audio.change(sampleRate: rate)
        cancelTranscription()
        // The detector starts over at the new rate with the next audio.
        detector = OutOfLine()
        if !turns.floor.isIdle, dropTurn() { answerWaitingTurn() }
    }

    mutating func turnDetectionChanged() {
        switch (configuration.turnDetection, vad) {
        case (nil, nil): break
        case (nil, .some):
            // Manual turns from now on; audio already buffered stays for the client to commit.
            detector = OutOfLine()
            if !turns.floor.isIdle { dropTurn() }
            cancelTranscription()
            turns.turnAwaitingResponse = false
        case (_?, nil):
            // Made with the next audio (`receive`).
            break
        case (let settings?, .some):
            let detector = detectorSettings(settings)
            vad?.settings = detector
            // A turn gone quiet while the model judged it, now under plain silence: it has been
            // quiet long enough to have stopped the detector, so it ends here.
            if settings.semanticEagerness == nil, !turns.floor.isIdle, let (withdraw, ended) = turns.floor.semanticEnded() {
                dropSpeculation(.cancelled)
                if let withdraw { carryOut(withdraw) }
                endTurn(ended)
            }
        }
    }

    /// The detector's silence: with a model to ask, `semantic_vad` stops listening at a short
    /// silence and lets the model judge (`TurnEnding.probeMs`); otherwise the silence that ends a turn.
    func detectorSettings(_ vad: ServerVAD) -> VoiceActivityDetector.Settings {
        Self.detectorSettings(vad, judgesTurns: judgesTurns)
    }

    static func detectorSettings(_ vad: ServerVAD, judgesTurns: Bool) -> VoiceActivityDetector.Settings {
        let silenceMs = judgesTurns && vad.semanticEagerness != nil ? TurnEnding.probeMs : vad.silenceDurationMs
        return .init(threshold: vad.threshold, prefixPaddingMs: vad.prefixPaddingMs, silenceDurationMs: silenceMs)
    }

}
