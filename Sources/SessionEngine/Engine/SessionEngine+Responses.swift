import JSON
import Models
import SpeechContracts

package extension SessionEngine {
    // MARK: Responses

    /// The session's history budget: the server's, or less if the session asked
    /// (`max_history_bytes`), and the model's context less the instructions, or less if the
    /// session's truncation says (`token_limits.post_instructions`).
    var historyBudget: ConversationHistory.Budget {
        var tokens = modelContextTokens.map { max(0, Int($0) - Usage.estimatedTokens(configuration.instructions)) }
        if case .retentionRatio(_, let limit?) = configuration.truncation { tokens = min(tokens ?? limit, limit) }
        let serverBytes = Int(maxHistoryBytes)
        return ConversationHistory.Budget(maxMessages: Int(maxHistoryMessages), maxBytes: min(configuration.maxHistoryBytes ?? serverBytes, serverBytes),
                                          maxTokens: tokens, truncation: configuration.truncation)
    }

    mutating func startResponse(_ overrides: ResponseOverrides) {
        // The model should read what the user said, so it waits for the words.
        guard turns.pendingTranscripts.isEmpty else {
            turns.deferredResponse = overrides
            return
        }
        let request = modelRequest(overrides, conversation.messages)
        // With truncation disabled, an outgrown conversation is the client's to shorten: the
        // model is not asked (a response with its own `input` does not read the conversation).
        let outgrown = overrides.input == nil && conversation.exceedsBudget
        if outgrown { dropSpeculation(.cancelled) }
        // A speculative reply that read what this one would read is this one, begun earlier.
        var speculative: SpeculativeReply?
        if let speculation = turns.speculation {
            if overrides == ResponseOverrides(), speculation.answers(request.messages) {
                speculative = speculation
                turns.speculation = nil
            } else {
                dropSpeculation(.restarted)
            }
        }
        var new = Response(id: speculative?.responseID ?? ids.make("resp"), itemID: ids.make("item"), modalities: request.options.outputModalities,
                           voice: configuration.voice, outputAudioFormat: configuration.outputAudioFormat, maxOutputTokens: request.options.maxOutputTokens,
                           maxTextBytes: historyBudget.maxBytes, inputTokens: Usage.estimatedInputTokens(request.messages), tools: request.options.tools,
                           metadata: overrides.metadata)
        new.outOfBand = overrides.outOfBand
        new.speed = configuration.speed
        new.speaks = synthesizes && new.modalities.contains(.audio)
        new.overrides = overrides
        new.mcpServers = overrides.mcpServers ?? configuration.mcpServers
        new.mcpTargets = request.targets
        new.isFiller = overrides.scripted?.isFiller == true
        turns.response = new
        // It sees the whole history, so it answers any turn that was waiting too.
        turns.turnAwaitingResponse = false
        emit(.responseCreated(snapshot(new, status: .inProgress, details: nil, output: [], usage: nil)))
        fact(.responseBegan(responseID: new.id, itemID: new.itemID))
        if outgrown {
            let budget = historyBudget
            let error = EventError(type: .invalidRequest, code: "context_length_exceeded",
                                   message: "the conversation holds \(conversation.count) items, \(conversation.textBytes) bytes of text (about \(conversation.tokens) tokens), over this session's budget of \(budget.maxMessages) items, \(budget.maxBytes) bytes"
                                       + (budget.maxTokens.map { ", \($0) tokens" } ?? "") + "; truncation is disabled: delete items (conversation.item.delete) or set session.truncation")
            emit(.error(error))
            return finish(.failed, details: .failed(error))
        }
        if let scripted = overrides.scripted {
            delta(new.id, scripted.text, filler: scripted.isFiller)
            return complete(.completed)
        }
        guard let speculative else {
            prepareTools(overrides)
            guard turns.response?.modelWaits == false else { return }
            return outbox.append(.startModel(responseID: new.id, messages: request.messages, options: request.options))
        }
        // What it said while the turn was ending is handled now, as if it had just arrived.
        outbox.append(.speculationEnded(responseID: new.id, .used, tokens: 0, answered: speculative.hasOutput))
        for input in speculative.held { apply(input) }
    }

    /// The messages and options a response with `overrides` sends the model, after `history`.
    func modelRequest(_ overrides: ResponseOverrides, _ history: [ChatMessage])
        -> (messages: [ChatMessage], options: ModelOptions, targets: [String: MCPToolState.Target]) {
        let instructions = overrides.instructions ?? configuration.instructions
        let maxTokens: Int? = switch overrides.maxOutputTokens {
        case nil: configuration.maxOutputTokens
        case .unlimited: nil
        case .limited(let n): n
        }
        var messages = history
        if let input = overrides.input { messages = input.compactMap { inputMessage($0) } }
        let language = configuration.language
        let told = LanguageInstruction.appended(to: instructions, language: language)
        if !told.isEmpty { messages.insert(ChatMessage(role: .system, text: told), at: 0) }
        let modalities = overrides.outputModalities ?? configuration.outputModalities
        let offered = offeredTools(functions: overrides.tools.map { $0.tools.isEmpty ? nil : $0 } ?? configuration.tools,
                                   servers: overrides.mcpServers ?? configuration.mcpServers, choice: overrides.toolChoice ?? configuration.toolChoice)
        var options = ModelOptions(maxOutputTokens: maxTokens, outputModalities: modalities, voice: configuration.voice,
                                   outputAudioFormat: configuration.outputAudioFormat, tools: offered.tools, toolChoice: offered.choice)
        options.language = language
        return (messages, options, offered.targets)
    }

    // MARK: Speculative replies

    /// Never in a transcription session, which asks no model at all.
    var speculates: Bool { configuration.type == .realtime && (configuration.turnDetection?.speculativeResponse ?? speculatesByDefault) }

    /// The end-of-turn model is weighing a silence, and these are the user's words so far: the
    /// reply starts on them, unheard (or starts again, if the words have changed since).
    mutating func speculate() {
        let words = turns.heardWords.trimmed
        guard speculates, transcribes, !conversation.exceedsBudget, !mcp.value.isListing(configuration.mcpServers), !mcp.value.hasAnswered, let speech = turns.floor.turn, turns.floor.isEndPending, turns.response == nil, turns.pendingTranscripts.isEmpty,
              turns.deferredResponse == nil, configuration.turnDetection?.createResponse ?? true, !words.isEmpty else { return }
        let heard = SpeculativeReply.words(words)
        if let outspokenWords = turns.outspokenWords, outspokenWords.itemID == speech.itemID, outspokenWords.words == heard { return }
        if let speculation = turns.speculation {
            if speculation.itemID == speech.itemID, SpeculativeReply.words(speculation.transcript) == heard {
                // A partial's guess the whole decode has now confirmed.
                if turns.heardWordsSettled, !speculation.onSettledWords {
                    turns.speculation?.onSettledWords = true
                    prepareSpeech()
                }
                return
            }
            dropSpeculation(.restarted)
        }
        let request = modelRequest(ResponseOverrides(), conversation.messages + [ChatMessage(role: .user, text: words)])
        let id = ids.make("resp")
        turns.speculation = SpeculativeReply(responseID: id, itemID: speech.itemID, messages: request.messages, maxHeldBytes: historyBudget.maxBytes,
                                             onSettledWords: turns.heardWordsSettled)
        outbox.append(.speculate(responseID: id, messages: request.messages, options: request.options))
    }

    /// The speculative call's output, held; a call that failed or ran past what may be held is dropped.
    mutating func hold(_ input: SessionInput) {
        guard var speculation = turns.speculation else { return }
        let fits = speculation.hold(input)
        turns.speculation = speculation
        if speculation.failed {
            dropSpeculation(.failed)
        } else if !fits {
            dropSpeculation(.cancelled)
        } else {
            prepareSpeech()
        }
    }

    /// The speculative reply's first piece of speech, once it has one, made now (`PreparedSpeech`),
    /// so that the turn's first sound does not wait on the voice if the reply is used. Only for a
    /// reply that will be spoken, before any call to a tool (a reply that calls one first speaks
    /// after its result, if at all), and begun on settled words: one begun on a partial's guess
    /// was dropped most of the time at ten talkers (18 of 26 such sounds, mostly the built-in
    /// agent's answer to half a question; docs/benchmarks.md, "Density"), each a wasted synthesis.
    mutating func prepareSpeech() {
        guard var speculation = turns.speculation, speculation.onSettledWords, !speculation.speechPrepared, synthesizes,
              configuration.outputModalities.contains(.audio), !speculation.callsTool,
              let piece = SpokenSentences.firstPiece(of: speculation.text, complete: speculation.finished) else { return }
        speculation.speechPrepared = true
        turns.speculation = speculation
        outbox.append(.speech(.prepare(responseID: speculation.responseID, voice: SpeechVoice(name: configuration.voice, speed: configuration.speed, language: configuration.language), piece)))
    }

    /// The speculative reply will not be used: its call is stopped, and it is counted with the
    /// tokens it cost. Nothing of it was ever sent.
    mutating func dropSpeculation(_ outcome: SpeculativeReply.Outcome) {
        guard let dropped = turns.speculation else { return }
        turns.speculation = nil
        if !dropped.failed { outbox.append(.cancelModel(responseID: dropped.responseID)) }
        outbox.append(.speculationEnded(responseID: dropped.responseID, outcome, tokens: dropped.tokens, answered: false))
    }

    /// `filler`: the server's words while a tool runs (`ToolFiller`), not the model's.
    mutating func delta(_ id: String, _ text: String, filler: Bool = false) {
        // Deltas of a response already cancelled or finished are late arrivals: dropped.
        guard turns.response?.id == id, !text.isEmpty, let itemID = turns.response?.itemID, let modalities = turns.response?.modalities,
              let delivered = turns.response?.text.utf8.count, let maxTextBytes = turns.response?.maxTextBytes else { return }
        // Only what fits the reply's budget is delivered: a delta that crosses it is cut (on a
        // character), so what the client saw, the history and the usage all agree.
        let piece = delivered + text.utf8.count <= maxTextBytes ? text : ConversationHistory.prefix(of: text, bytes: maxTextBytes - delivered)
        if !piece.isEmpty {
            if !filler { turns.filler.somethingElseSaid() }
            if turns.response?.itemStarted == false {
                // The text item takes the next place in the output: first, or after calls begun before it.
                turns.response?.itemStarted = true
                let next = turns.response?.nextOutputIndex ?? 0
                turns.response?.messageOutputIndex = next
                turns.response?.nextOutputIndex = next + 1
                let outputIndex = turns.response?.messageOutputIndex ?? 0
                let at = ContentLocation(responseID: id, itemID: itemID, outputIndex: outputIndex)
                let item = ConversationItem(id: itemID, role: .assistant, status: .inProgress, content: [])
                emit(.outputItemAdded(responseID: id, outputIndex: outputIndex, item: item))
                if turns.response?.outOfBand == false {
                    emit(.conversationItemCreated(item, previousItemID: conversation.lastItemID))
                }
                emit(.contentPartAdded(at, part: Self.part(modalities, text: "")))
                // Its place in the conversation is taken now, empty until it ends: an item added
                // while it streams comes after it, in the history as in `previous_item_id`.
                if turns.response?.outOfBand == false {
                    conversation.append(id: itemID, ChatMessage(role: .assistant, text: ""), audio: modalities.contains(.audio))
                }
            }
            let at = ContentLocation(responseID: id, itemID: itemID, outputIndex: turns.response?.messageOutputIndex ?? 0)
            emit(modalities.contains(.audio) ? .outputAudioTranscriptDelta(at, delta: piece) : .outputTextDelta(at, delta: piece))
            if let r = turns.response, r.speaks {
                outbox.append(.speech(.text(at, voice: SpeechVoice(name: r.voice, speed: r.speed, language: configuration.language), format: r.outputAudioFormat, piece)))
            }
            // Appended in place: no copy of the response is held, so the reply so far is not
            // copied on every delta.
            turns.response?.text += piece
        }
        // Stopped once the estimated output reaches max_output_tokens, or when a delta did not
        // fit: the history's whole budget stops a runaway model, as a reply past it could never
        // be kept anyway.
        let estimated = Usage.estimatedTokens(turns.response?.text ?? "")
        let limitReached = turns.response?.maxOutputTokens.map { estimated >= $0 } ?? false
        if piece.utf8.count < text.utf8.count || limitReached {
            outbox.append(.cancelModel(responseID: id))
            complete(.incomplete, details: .incomplete(reason: "max_output_tokens"))
        }
    }

    // MARK: Function calls

    /// The longest arguments a call may have: as much as a client may send back as output.
    static let maxArgumentsBytes = NewConversationItem.maxFunctionTextBytes

    /// The model began a call: it becomes a `function_call` item of the response's output, and
    /// takes its place in the conversation (its arguments are filled in when the response ends).
    mutating func toolCallStarted(_ id: String, index: Int, callID: String, name: String) {
        guard let current = turns.response, current.id == id, !current.calls.contains(where: { $0.index == index }) else { return }
        guard current.tools?.tools.contains(where: { $0.name == name }) == true else {
            return failModel(id, "the model called '\(name)', which is not among this response's tools")
        }
        if let target = current.mcpTargets[name] { return mcpCallStarted(current, index: index, callID: callID, name: name, target) }
        let call = Response.Call(index: index, itemID: ids.make("item"), outputIndex: current.nextOutputIndex, callID: callID, name: name)
        turns.response?.nextOutputIndex += 1
        turns.response?.calls.append(call)
        let item = ConversationItem(id: call.itemID, role: .assistant, status: .inProgress, content: [],
                                    function: .call(callID: callID, name: name, arguments: ""))
        emit(.outputItemAdded(responseID: id, outputIndex: call.outputIndex, item: item))
        guard !current.outOfBand else { return }
        emit(.conversationItemCreated(item, previousItemID: conversation.lastItemID))
        conversation.append(id: call.itemID, ChatMessage(role: .assistant, text: "", toolCalls: [ToolCall(id: callID, name: name, arguments: "")]))
    }

    mutating func toolCallArguments(_ id: String, index: Int, _ delta: String) {
        guard turns.response?.id == id, !delta.isEmpty, let position = turns.response?.calls.firstIndex(where: { $0.index == index }),
              let call = turns.response?.calls[position] else { return }
        guard call.arguments.utf8.count + delta.utf8.count <= Self.maxArgumentsBytes else {
            return failModel(id, "the model's arguments for '\(call.name)' passed \(Self.maxArgumentsBytes) bytes")
        }
        turns.response?.calls[position].arguments += delta
        if let mcp = call.mcp {
            // An approval request shows its arguments whole, when it is done.
            if !mcp.asksApproval { emit(.mcpCallArgumentsDelta(MCPCallLocation(responseID: id, itemID: call.itemID, outputIndex: call.outputIndex), delta: delta)) }
            return
        }
        let at = FunctionCallLocation(responseID: id, itemID: call.itemID, outputIndex: call.outputIndex, callID: call.callID)
        emit(.functionCallArgumentsDelta(at, delta: delta))
    }

    /// The model broke the function-calling contract: its call is stopped and the response fails
    /// with the reason; the session goes on.
    mutating func failModel(_ id: String, _ message: String) {
        outbox.append(.cancelModel(responseID: id))
        let error = EventError(type: .server, code: "invalid_tool_call", message: message)
        emit(.error(error))
        let speaks = turns.response?.speaks == true
        finish(.failed, details: .failed(error))
        if speaks { outbox.append(.speech(.stop(responseID: id))) }
    }

    /// A call's arguments must be a JSON object when the model says it is done.
    func malformedCall() -> Response.Call? {
        turns.response?.calls.first { call in
            guard let parsed = try? JSON(parsing: call.arguments.isEmpty ? "{}" : call.arguments) else { return true }
            return parsed.object == nil
        }
    }

    // MARK: Items

    /// What an out-of-band response's `input` item says to the model; a reference to an item the
    /// conversation no longer holds says nothing.
    func inputMessage(_ input: ResponseOverrides.InputItem) -> ChatMessage? {
        switch input {
        case .reference(let id): return conversation.entry(id)?.message
        case .item(let new):
            switch new.function {
            case .output(let callID, let output): return ChatMessage(role: .tool, text: output, toolCallID: callID)
            case .call(let callID, let name, let arguments):
                return ChatMessage(role: .assistant, text: "", toolCalls: [ToolCall(id: callID, name: name, arguments: arguments)])
            case nil: return ChatMessage(role: new.role, text: new.text)
            }
        }
    }

    /// `conversation.item.create`: a message, a function call's output (which must answer a call
    /// in the conversation), or a call; after `previous_item_id` when the client names one.
    mutating func createItem(_ new: NewConversationItem, _ event: ClientEvent) {
        // An approval answers its request wherever the client places it (the JavaScript SDK
        // names the request as the previous item): it is not a message of the history.
        if let approval = new.approval { return answerApproval(new, approval, event) }
        var position = conversation.count
        if let previous = new.previousItemID {
            guard let at = conversation.position(after: previous) else {
                emitError(.invalidRequest, "invalid_value", "'item.previous_item_id' '\(previous)' is not in the conversation", event)
                return
            }
            position = at
        }
        let id = new.id ?? ids.make("item")
        let item: ConversationItem
        let message: ChatMessage
        switch new.function {
        case .output(let callID, let output):
            guard conversation.call(callID) != nil else {
                emitError(.invalidRequest, "invalid_value",
                          "'item.call_id' '\(callID)' answers no function call in the conversation", event)
                return
            }
            item = ConversationItem(id: id, role: .tool, status: .completed, content: [], function: new.function)
            message = ChatMessage(role: .tool, text: output, toolCallID: callID)
        case .call(let callID, let name, let arguments):
            item = ConversationItem(id: id, role: .assistant, status: .completed, content: [], function: new.function)
            message = ChatMessage(role: .assistant, text: "", toolCalls: [ToolCall(id: callID, name: name, arguments: arguments)])
        case nil:
            let content: ConversationItem.Content = new.role == .assistant ? .outputText(new.text) : .inputText(new.text)
            item = ConversationItem(id: id, role: new.role, status: .completed, content: [content])
            message = ChatMessage(role: new.role, text: new.text)
        }
        let previous = position == 0 ? nil : conversation.id(at: position - 1)
        emit(.conversationItemCreated(item, previousItemID: previous))
        emit(.conversationItemDone(item, previousItemID: previous))
        switch new.function {
        case .output(let callID, _):
            fact(.toolReturned(callID: callID))
            clientToolReturned()
        case .call: break
        case nil: if new.role == .user { fact(.userItem(itemID: id, text: new.text)) }
        }
        conversation.insert(id: id, message, at: position)
    }

    mutating func cancel(_ id: String, reason: String) {
        outbox.append(.cancelModel(responseID: id))
        let speaks = turns.response?.speaks == true
        finish(.cancelled, details: .cancelled(reason: reason))
        // After response.done, so that the truncation it brings back follows it.
        if speaks { outbox.append(.speech(.stop(responseID: id))) }
    }

    /// The model is done: a spoken reply ends once its speech is out, any other at once.
    mutating func complete(_ status: RealtimeResponse.Status, details: RealtimeResponse.StatusDetails? = nil, usage: Usage? = nil) {
        guard let current = turns.response else { return }
        if let call = malformedCall() {
            return failModel(current.id, "the model's arguments for '\(call.name)' are not a JSON object: \(call.arguments.prefix(200))")
        }
        // MCP calls run before the response ends (a filler may be said meanwhile); it ends when
        // the last answers (`mcpToolCalled`).
        if status == .completed, current.ending == nil, runWrittenCalls() {
            turns.response?.ending = .init(status: status, details: details, usage: usage)
            return
        }
        guard current.speaks else { return finish(status, details: details, usage: usage) }
        guard current.ending == nil else { return }
        turns.response?.ending = .init(status: status, details: details, usage: usage)
        outbox.append(.speech(.end(responseID: current.id)))
    }

    mutating func speechOutput(_ id: String, _ event: SpeechOutputEvent) {
        switch event {
        case .spoken(let itemID, let audioMs):
            lastSpokenReply = (itemID, audioMs)
        case .audible:
            guard turns.response?.id == id else { return }
            turns.response?.audible = true
            turns.reopenable = nil
        case .interrupted(let itemID, let playedMs, let heard):
            // A reply withdrawn unheard (a reopened turn) left the conversation: nothing to truncate.
            guard conversation.entry(itemID) != nil else { return }
            // The response is over by now (cancelled); the client learns where its audio stopped,
            // and the history keeps what the user heard, not the text generated ahead of the audio.
            conversation.setText(heard, of: itemID)
            emit(.conversationItemTruncated(itemID: itemID, contentIndex: 0, audioEndMs: playedMs))
            fact(.replyCut(itemID: itemID, audioEndMs: playedMs))
        case .failed(let error):
            guard turns.response?.id == id else { return }
            emit(.error(EventError(type: .server, code: error.code, message: "the reply could not be spoken: \(error.message)")))
        case .finished:
            guard let current = turns.response, current.id == id, let ending = current.ending else { return }
            finish(ending.status, details: ending.details, usage: ending.usage)
        }
    }

    /// Closes the response in flight: the item's `.done` events if it has begun, then
    /// `response.done`, then the response a waiting turn is owed, if any. Whatever text was
    /// delivered is the reply's text in the history, whatever the status: it is what the user saw.
    mutating func finish(_ status: RealtimeResponse.Status, details: RealtimeResponse.StatusDetails? = nil, usage: Usage? = nil) {
        closeMCPCalls(status)
        guard let current = turns.response else { return }
        turns.response = nil
        // Whatever it said is there to be heard now: the turn it answered is closed.
        turns.reopenable = nil
        lastResponseID = current.id
        if turns.floor.isPaused { replyEndedUnderSpeech() }
        var output: [(index: Int, item: ConversationItem)] = []
        let itemStatus: ConversationItem.Status = status == .completed ? .completed : .incomplete
        if current.itemStarted {
            let at = ContentLocation(responseID: current.id, itemID: current.itemID, outputIndex: current.messageOutputIndex)
            // A spoken reply's audio ends here however the response ends: spoken out, cancelled or failed.
            if current.speaks { emit(.outputAudioDone(at)) }
            let part = Self.part(current.modalities, text: current.text)
            emit(current.modalities.contains(.audio) ? .outputAudioTranscriptDone(at, transcript: current.text) : .outputTextDone(at, text: current.text))
            emit(.contentPartDone(at, part: part))
            let item = ConversationItem(id: current.itemID, role: .assistant, status: itemStatus, content: [part])
            emit(.outputItemDone(responseID: current.id, outputIndex: current.messageOutputIndex, item: item))
            if !current.outOfBand { emit(.conversationItemDone(item, previousItemID: conversation.previousID(of: current.itemID))) }
            output.append((current.messageOutputIndex, item))
            if !current.outOfBand { conversation.setText(current.text, of: current.itemID) }
        }
        for call in current.calls where call.mcp != nil {
            let item = mcpItem(call)
            // A call that ran said it was done when it settled; an approval request says so now.
            if call.mcp?.itemDone != true {
                emit(.outputItemDone(responseID: current.id, outputIndex: call.outputIndex, item: item))
                if !current.outOfBand { emit(.conversationItemDone(item, previousItemID: nil)) }
            }
            output.append((call.outputIndex, item))
        }
        for var call in current.calls where call.mcp == nil {
            // A call without arguments (Anthropic streams an empty input) takes none: "{}".
            if call.arguments.isEmpty { call.arguments = "{}" }
            let at = FunctionCallLocation(responseID: current.id, itemID: call.itemID, outputIndex: call.outputIndex, callID: call.callID)
            emit(.functionCallArgumentsDone(at, name: call.name, arguments: call.arguments))
            fact(.toolCalled(responseID: current.id, callID: call.callID, name: call.name, arguments: call.arguments))
            let item = ConversationItem(id: call.itemID, role: .assistant, status: itemStatus, content: [],
                                        function: .call(callID: call.callID, name: call.name, arguments: call.arguments))
            emit(.outputItemDone(responseID: current.id, outputIndex: call.outputIndex, item: item))
            if !current.outOfBand { emit(.conversationItemDone(item, previousItemID: conversation.previousID(of: call.itemID))) }
            output.append((call.outputIndex, item))
            if !current.outOfBand { conversation.setArguments(call.arguments, of: call.itemID) }
        }
        let written = current.text + current.calls.map { $0.name + $0.arguments }.joined()
        let usage = usage ?? Usage(inputTokens: current.inputTokens, outputTokens: Usage.estimatedTokens(written))
        let done = snapshot(current, status: status, details: details, output: output.sorted { $0.index < $1.index }.map(\.item), usage: usage)
        emit(.responseDone(done))
        fact(.responseEnded(done))
        if configuration.turnDetection?.idleTimeoutMs != nil { idleSinceMs = audio.totalMs }
        if status == .completed { clientToolsWait(current) }
        answerWaitingTurn()
        guard turns.response == nil, configuration.type == .realtime else { return }
        if current.isFiller, turns.pendingTranscripts.isEmpty, let deferred = turns.deferredResponse {
            // The client's response.create, held while the filler was said.
            turns.deferredResponse = nil
            startResponse(deferred)
        } else if mcp.value.hasAnswered {
            startResponse(ResponseOverrides())
        } else if tooling.continuesAfterTools, status == .completed, !current.outOfBand,
                  current.calls.contains(where: { $0.mcp?.phase == .done && $0.mcp?.asksApproval == false }) {
            // A voice agent answers with the tool's output without being asked (see ToolSettings).
            startResponse(ResponseOverrides())
        }
    }

    static func part(_ modalities: OutputModalities, text: String) -> ConversationItem.Content {
        modalities.contains(.audio) ? .outputAudio(transcript: text) : .outputText(text)
    }

    func snapshot(_ r: Response, status: RealtimeResponse.Status, details: RealtimeResponse.StatusDetails?, output: [ConversationItem], usage: Usage?) -> RealtimeResponse {
        RealtimeResponse(id: r.id, conversationID: r.outOfBand ? nil : conversationID, status: status, statusDetails: details, output: output, usage: usage,
                         outputModalities: r.modalities, voice: r.voice, outputAudioFormat: r.outputAudioFormat, maxOutputTokens: r.maxOutputTokens,
                         metadata: r.metadata)
    }

}
