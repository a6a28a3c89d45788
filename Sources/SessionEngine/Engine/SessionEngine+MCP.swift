import JSON
import Models
import MCP

/// MCP tools the server runs itself: servers listed when a session names them, their tools offered
/// to the model, its calls run with the Realtime API's events (or turned into approval requests),
/// and the filler said while a tool runs (`ToolFiller`).
///
/// A call's life: the model names an MCP tool → an `mcp_call` item (`response.output_item.added`,
/// `conversation.item.added`), its arguments as `response.mcp_call_arguments.delta`; the model ends
/// → `…arguments.done`, `response.mcp_call.in_progress`, `.mcp(.call)`; the outcome →
/// `response.mcp_call.completed` or `.failed`, the call and its output join the history; once no
/// call runs, the response ends as any other. A call whose tool needs approval becomes an
/// `mcp_approval_request` instead; the client's `mcp_approval_response` starts a response that
/// runs an approved call once (then asks the model) or tells the model it was declined.
package extension SessionEngine {
    // MARK: Servers

    /// The first of `entries` the operator's allow-list refuses, with its place.
    func refusedServer(_ entries: [MCPServerEntry]) -> (index: Int, entry: MCPServerEntry)? {
        entries.enumerated().first { !tooling.mcpAllowList.allows($0.element.url) }.map { ($0.offset, $0.element) }
    }

    /// An error for a server the allow-list refuses (`param`: where the entries were given).
    func notAllowed(_ refused: (index: Int, entry: MCPServerEntry), param: String, _ event: ClientEvent) -> EventError {
        EventError(type: .invalidRequest, code: "mcp_server_not_allowed",
                   message: "the MCP server '\(refused.entry.label)' (\(refused.entry.endpoint)) is not one this server may call: its operator allows MCP servers with --mcp-allow",
                   param: "\(param)[\(refused.index)].server_url", eventID: event.eventID)
    }

    /// The servers `entries` name, listed unless they already are (an entry given again unchanged
    /// is not listed again). `forSession`: the session's `tools` (servers it no longer names go).
    mutating func listServers(_ entries: [MCPServerEntry], forSession: Bool) {
        if forSession {
            mcp.servers.removeAll { server in server.forSession && !entries.contains { $0.label == server.label } }
        }
        for entry in entries {
            if let index = mcp.servers.firstIndex(where: { $0.label == entry.label }) {
                if mcp.servers[index].entry.listsSameTools(as: entry) {
                    // Another approval rule or description applies from now on; the list stands.
                    mcp.servers[index].entry = entry
                    if forSession { mcp.servers[index].forSession = true }
                    continue
                }
                mcp.servers.remove(at: index)
            }
            if mcp.servers.count >= MCPToolState.maxServers, let old = mcp.servers.firstIndex(where: { !$0.forSession }) ?? mcp.servers.indices.first {
                mcp.servers.remove(at: old)
            }
            let itemID = ids.make("item")
            mcp.servers.append(.init(entry: entry, itemID: itemID, listing: .inProgress, forSession: forSession))
            let item = ConversationItem(id: itemID, role: .assistant, status: .inProgress, content: [], mcp: .listTools(serverLabel: entry.label, tools: []))
            emit(.conversationItemCreated(item, previousItemID: conversation.lastItemID))
            emit(.mcpListToolsInProgress(itemID: itemID))
            outbox.append(.mcp(.list(itemID: itemID, server: entry)))
        }
    }

    mutating func mcpToolsListed(_ itemID: String, _ result: Result<[MCPTool], MCPError>) {
        guard let index = mcp.value.server(listedInto: itemID), mcp.servers[index].listing == .inProgress else { return }
        let entry = mcp.servers[index].entry
        switch result {
        case .success(let tools):
            mcp.servers[index].listing = .listed(tools)
            emit(.mcpListToolsCompleted(itemID: itemID))
            let item = ConversationItem(id: itemID, role: .assistant, status: .completed, content: [],
                                        mcp: .listTools(serverLabel: entry.label, tools: mcp.value.tools(of: entry)))
            emit(.conversationItemDone(item, previousItemID: nil))
            fact(.mcpListed(serverLabel: entry.label, tools: tools.count, error: nil))
        case .failure(let error):
            mcp.servers[index].listing = .failed(error)
            emit(.mcpListToolsFailed(itemID: itemID))
            emit(.error(EventError(type: .server, code: "mcp_list_tools_failed",
                                   message: "the tools of MCP server '\(entry.label)' could not be listed (\(error.type)): \(error.message)")))
            fact(.mcpListed(serverLabel: entry.label, tools: 0, error: error.type))
        }
        startWaitingModel()
    }

    // MARK: The model's tools

    /// The model's tools and choice for a response: the client's functions and every listed tool
    /// of `servers`, and `tool_choice` with an MCP server's made one the model understands.
    func offeredTools(functions: ToolSet?, servers: [MCPServerEntry], choice: ToolChoice)
        -> (tools: ToolSet?, choice: ToolChoice, targets: [String: MCPToolState.Target]) {
        let targets = servers.isEmpty ? [] : mcp.value.targets(servers, besides: functions?.tools ?? [])
        func definition(_ named: (name: String, target: MCPToolState.Target)) -> ToolDefinition {
            ToolDefinition(name: named.name, description: named.target.tool.description, parameters: named.target.tool.inputSchema)
        }
        var tools = functions
        if !targets.isEmpty { tools = ToolSet.of((functions?.tools ?? []) + targets.map(definition)) }
        var choice = choice
        if case .mcp(let label, let name) = choice {
            let wanted = targets.filter { $0.target.entry.label == label && (name == nil || $0.target.tool.name == name) }
            if wanted.isEmpty {
                // The server's tools did not list (its failure was told): the model goes on without.
                choice = .auto
            } else if name != nil {
                choice = .function(wanted[0].name)
            } else {
                tools = ToolSet.of(wanted.map(definition))
                choice = .required
            }
        }
        return (tools, choice, Dictionary(targets.map { ($0.name, $0.target) }, uniquingKeysWith: { first, _ in first }))
    }

    // MARK: A response's tools

    /// At a response's start: its own servers listed, and the calls the client approved run
    /// before the model is asked (`modelWaits` while either is under way).
    mutating func prepareTools(_ overrides: ResponseOverrides) {
        guard let current = turns.response else { return }
        if let own = overrides.mcpServers { listServers(own, forSession: false) }
        let answered = current.outOfBand ? [] : mcp.value.takeAnswered()
        for approval in answered where approval.approved == true {
            let call = Response.Call(index: -1 - (turns.response?.calls.count ?? 0), itemID: ids.make("item"), outputIndex: turns.response?.nextOutputIndex ?? 0,
                                     callID: ids.make("call"), name: approval.modelName,
                                     arguments: approval.arguments,
                                     mcp: .init(server: approval.entry, tool: approval.tool, asksApproval: false, approvalRequestID: approval.id))
            turns.response?.nextOutputIndex += 1
            turns.response?.calls.append(call)
            let item = mcpItem(call)
            emit(.outputItemAdded(responseID: current.id, outputIndex: call.outputIndex, item: item))
            emit(.conversationItemCreated(item, previousItemID: conversation.lastItemID))
            run(call)
        }
        let running = turns.response?.calls.contains { $0.mcp?.phase == .running } ?? false
        turns.response?.modelWaits = mcp.value.isListing(current.mcpServers) || running
    }

    /// The response's model call, now that its tools are known.
    mutating func startModelCall() {
        guard let current = turns.response else { return }
        let request = modelRequest(current.overrides, conversation.messages)
        turns.response?.tools = request.options.tools
        turns.response?.mcpTargets = request.targets
        outbox.append(.startModel(responseID: current.id, messages: request.messages, options: request.options))
    }

    /// A response waiting on a listing or an approved call asks its model once neither is left.
    mutating func startWaitingModel() {
        guard let current = turns.response, current.modelWaits, !mcp.value.isListing(current.mcpServers),
              !current.calls.contains(where: { $0.mcp?.phase == .running }) else { return }
        turns.response?.modelWaits = false
        startModelCall()
    }

    /// The model began a call of an MCP tool: an `mcp_call` item (or an approval request).
    mutating func mcpCallStarted(_ current: Response, index: Int, callID: String, name: String, _ target: MCPToolState.Target) {
        let call = Response.Call(index: index, itemID: ids.make("item"), outputIndex: current.nextOutputIndex, callID: callID, name: name,
                                 mcp: .init(server: target.entry, tool: target.tool.name, asksApproval: target.needsApproval))
        turns.response?.nextOutputIndex += 1
        turns.response?.calls.append(call)
        let item = mcpItem(call)
        emit(.outputItemAdded(responseID: current.id, outputIndex: call.outputIndex, item: item))
        if !current.outOfBand { emit(.conversationItemCreated(item, previousItemID: conversation.lastItemID)) }
    }

    /// The model's calls of MCP tools that need no approval start now (its text is complete);
    /// whether any runs, so that the response waits for them.
    mutating func runWrittenCalls() -> Bool {
        guard let calls = turns.response?.calls else { return false }
        for call in calls where call.mcp?.phase == .written && call.mcp?.asksApproval == false {
            var written = call
            if written.arguments.isEmpty { written.arguments = "{}" }
            if let index = turns.response?.calls.firstIndex(where: { $0.itemID == call.itemID }) { turns.response?.calls[index].arguments = written.arguments }
            if let id = turns.response?.id {
                emit(.mcpCallArgumentsDone(MCPCallLocation(responseID: id, itemID: call.itemID, outputIndex: call.outputIndex), arguments: written.arguments))
            }
            run(written)
        }
        return turns.response?.calls.contains { $0.mcp?.phase == .running } ?? false
    }

    /// `call` goes to its server.
    mutating func run(_ call: Response.Call) {
        guard let id = turns.response?.id, let index = turns.response?.calls.firstIndex(where: { $0.itemID == call.itemID }), let server = call.mcp?.server,
              let tool = call.mcp?.tool else { return }
        turns.response?.calls[index].mcp?.phase = .running
        emit(.mcpCallInProgress(MCPCallLocation(responseID: id, itemID: call.itemID, outputIndex: call.outputIndex)))
        if let running = turns.response?.calls[index] { mcp.value.remember(mcpItem(running)) }
        outbox.append(.mcp(.call(itemID: call.itemID, server: server, tool: tool, arguments: call.arguments)))
        fact(.mcpCallBegan(responseID: id, itemID: call.itemID, serverLabel: server.label, tool: tool))
        if let step = turns.filler.began(tooling.filler, speaks: turns.response?.speaks == true) { outbox.append(.toolWait(step)) }
    }

    mutating func mcpToolCalled(_ itemID: String, _ result: Result<MCPToolOutput, MCPError>) {
        guard let current = turns.response, let index = current.calls.firstIndex(where: { $0.itemID == itemID }),
              current.calls[index].mcp?.phase == .running else { return }
        switch result {
        case .success(let output): turns.response?.calls[index].mcp?.output = Self.bounded(output.text)
        case .failure(let error): turns.response?.calls[index].mcp?.error = error
        }
        settle(index, failed: { if case .failure = result { true } else { false } }())
        guard let now = turns.response, !now.calls.contains(where: { $0.mcp?.phase == .running }) else { return }
        if let step = turns.filler.ended() { outbox.append(.toolWait(step)) }
        if now.modelWaits {
            startWaitingModel()
        } else if let ending = now.ending {
            // The model had ended; the response ends now, as `complete` would have.
            turns.response?.ending = nil
            complete(ending.status, details: ending.details, usage: ending.usage)
        }
    }

    /// The call at `index` is over: its event, and its place in the history (the model reads the
    /// output on its next call).
    mutating func settle(_ index: Int, failed: Bool) {
        guard let current = turns.response else { return }
        turns.response?.calls[index].mcp?.phase = .done
        let call = current.calls[index]
        let at = MCPCallLocation(responseID: current.id, itemID: call.itemID, outputIndex: call.outputIndex)
        emit(failed ? .mcpCallFailed(at) : .mcpCallCompleted(at))
        guard let done = turns.response?.calls[index], let outcome = done.mcp else { return }
        // The item is done with its outcome: a response that goes on (the model answering an
        // approved call, a filler) says so after it, not before.
        let item = mcpItem(done)
        emit(.outputItemDone(responseID: current.id, outputIndex: call.outputIndex, item: item))
        if !current.outOfBand { emit(.conversationItemDone(item, previousItemID: nil)) }
        turns.response?.calls[index].mcp?.itemDone = true
        mcp.value.remember(item)
        fact(.mcpCallEnded(responseID: current.id, itemID: call.itemID, error: outcome.error?.type))
        guard !current.outOfBand else { return }
        let said = outcome.output ?? "The call failed (\(outcome.error?.type ?? "error")): \(outcome.error?.message ?? "")"
        // Two messages for the model, one item for the client: the later, the output, takes the
        // item's id, so that the item after it names the mcp_call as its previous_item_id (not an
        // id the client never saw) and one inserted after the mcp_call comes after its output.
        conversation.append(id: ids.make("item"), ChatMessage(role: .assistant, text: "", toolCalls: [ToolCall(id: call.callID, name: call.name, arguments: call.arguments)]))
        conversation.append(id: call.itemID, ChatMessage(role: .tool, text: said, toolCallID: call.callID))
    }

    /// What a tool said, within what the history can hold of one output.
    static func bounded(_ text: String) -> String {
        text.utf8.count <= NewConversationItem.maxFunctionTextBytes ? text : ConversationHistory.prefix(of: text, bytes: NewConversationItem.maxFunctionTextBytes)
    }

    /// The item of an MCP call as the client sees it now.
    func mcpItem(_ call: Response.Call) -> ConversationItem {
        guard let state = call.mcp else { return ConversationItem(id: call.itemID, role: .assistant, status: .completed, content: []) }
        let status: ConversationItem.Status = state.phase == .done ? .completed : .inProgress
        if state.asksApproval {
            return ConversationItem(id: call.itemID, role: .assistant, status: status, content: [],
                                    mcp: .approvalRequest(serverLabel: state.server.label, name: state.tool, arguments: call.arguments))
        }
        return ConversationItem(id: call.itemID, role: .assistant, status: status, content: [],
                                mcp: .call(.init(serverLabel: state.server.label, name: state.tool, arguments: call.arguments,
                                                 approvalRequestID: state.approvalRequestID, output: state.output, error: state.error)))
    }

    /// At the response's end: a call still running is stopped (a barge-in, a cancel) and fails as
    /// cancelled; one the model only wrote fails as not run; an approval request is kept for the
    /// client's answer, if the response completed.
    mutating func closeMCPCalls(_ status: RealtimeResponse.Status) {
        guard let calls = turns.response?.calls else { return }
        for (index, call) in calls.enumerated() {
            guard let state = call.mcp, state.phase != .done else { continue }
            if state.asksApproval {
                turns.response?.calls[index].mcp?.phase = .done
                if status == .completed {
                    mcp.value.asked(.init(id: call.itemID, entry: state.server, tool: state.tool, modelName: call.name,
                                         arguments: call.arguments.isEmpty ? "{}" : call.arguments))
                }
                if let done = turns.response?.calls[index] { mcp.value.remember(mcpItem(done)) }
                continue
            }
            if state.phase == .running { outbox.append(.mcp(.cancel(itemID: call.itemID))) }
            turns.response?.calls[index].mcp?.error = .cancelled(state.phase == .running ? "the response ended before the tool answered" : "the response ended before the call was made")
            settle(index, failed: true)
        }
        if let step = turns.filler.ended() { outbox.append(.toolWait(step)) }
    }

    // MARK: Approvals

    /// The client's `mcp_approval_response`: taken once per request, then acted on by a response
    /// (begun now, or when the one in flight ends).
    mutating func answerApproval(_ new: NewConversationItem, _ approval: NewConversationItem.Approval, _ event: ClientEvent) {
        let request: MCPToolState.Approval
        switch mcp.value.answer(approval.requestID, approve: approval.approve) {
        case .unknown:
            return emitError(.invalidRequest, "invalid_value",
                             "'item.approval_request_id' '\(approval.requestID)' answers no MCP approval request of this session", event)
        case .alreadyAnswered:
            return emitError(.invalidRequest, "invalid_value",
                             "the MCP approval request '\(approval.requestID)' was already answered: an approved call runs once", event)
        case .accepted(let asked):
            request = asked
        }
        let id = new.id ?? ids.make("item")
        let item = ConversationItem(id: id, role: .user, status: .completed, content: [],
                                    mcp: .approvalResponse(approvalRequestID: approval.requestID, approve: approval.approve, reason: approval.reason))
        emit(.conversationItemCreated(item, previousItemID: conversation.lastItemID))
        emit(.conversationItemDone(item, previousItemID: conversation.lastItemID))
        mcp.value.remember(item)
        fact(.mcpApproval(requestID: approval.requestID, approved: approval.approve))
        if !approval.approve {
            // The model learns the call was declined, as it would learn any call's outcome.
            let declined = "The user declined this call" + (approval.reason.map { ": \($0)" } ?? ".")
            conversation.append(id: request.id, ChatMessage(role: .assistant, text: "", toolCalls: [ToolCall(id: request.id, name: request.modelName, arguments: request.arguments)]))
            conversation.append(id: id, ChatMessage(role: .tool, text: declined, toolCallID: request.id))
        }
        if turns.response == nil, configuration.type == .realtime { startResponse(ResponseOverrides()) }
    }

    // MARK: The filler

    mutating func toolWaitElapsed(_ token: Int) {
        if let current = turns.response {
            // An MCP call runs inside this response: the filler is its words, if it has said none.
            guard current.speaks, !current.itemStarted, current.calls.contains(where: { $0.mcp?.phase == .running }),
                  turns.filler.due(token, userSpeaking: !turns.floor.isIdle) else { return }
            fact(.fillerSaid(responseID: current.id))
            // A line's end after it: the voice speaks a sentence once text follows its closing
            // mark, or at a line's end (`SpokenSentences.sentenceEnd`), and no text follows while the
            // tool runs, so without it the filler was spoken only once the call had returned.
            delta(current.id, tooling.filler.phrase + "\n", filler: true)
        } else {
            // The client's function runs: the filler is a response of its own, out of band.
            guard synthesizes, configuration.outputModalities.contains(.audio), configuration.type == .realtime, turns.pendingTranscripts.isEmpty,
                  turns.filler.due(token, userSpeaking: !turns.floor.isIdle) else { return }
            var overrides = ResponseOverrides()
            overrides.outOfBand = true
            overrides.scripted = .init(text: tooling.filler.phrase, isFiller: true)
            overrides.metadata = .object([("parley", .string("filler"))])
            startResponse(overrides)
            if let id = turns.response?.id { fact(.fillerSaid(responseID: id)) }
        }
    }

    /// A client's function call went out at the end of a response: the filler's timer starts.
    mutating func clientToolsWait(_ response: Response) {
        guard !response.isFiller, response.calls.contains(where: { $0.mcp == nil }) else { return }
        if let step = turns.filler.began(tooling.filler, speaks: synthesizes && configuration.outputModalities.contains(.audio)) {
            outbox.append(.toolWait(step))
        }
    }

    /// The client's function answered: no filler is wanted for it any more.
    mutating func clientToolReturned() {
        if turns.response == nil, let step = turns.filler.ended() { outbox.append(.toolWait(step)) }
    }
}
