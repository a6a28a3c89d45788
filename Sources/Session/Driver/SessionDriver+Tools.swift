import JSON
import Loop
import Models
import MCP
import SessionEngine

/// The tools a session's server runs or waits on: its MCP clients (one per server it names, on
/// its own loop), the calls under way, and the filler's timer.
final class SessionTools {
    var clients: [String: MCPClient] = [:]
    var calls: [String: MCPCall] = [:]
    var fillerTimer: ScheduledTask?

    func close() {
        for call in calls.values { call.cancel() }
        calls = [:]
        for client in clients.values { client.close() }
        clients = [:]
        fillerTimer?.cancel()
        fillerTimer = nil
    }
}

/// Each loop's tool lists (`MCPToolCache`), and the listings under way: a thousand sessions that
/// name one server as they start list it once, not a thousand times.
final class MCPLoopTools {
    var cache = MCPToolCache()
    var listing: [MCPToolCache.Key: [(Result<[MCPTool], MCPError>) -> Void]] = [:]
}

extension SessionDriver {
    var tools: SessionTools {
        if let toolWork { return toolWork }
        let made = SessionTools()
        toolWork = made
        return made
    }

    func mcp(_ step: MCPStep, on loop: EventLoop) {
        switch step {
        case .list(let itemID, let server):
            let shared = loop.local { MCPLoopTools() }
            let done: (Result<[MCPTool], MCPError>) -> Void = { [weak self] result in self?.handle(.mcpToolsListed(itemID: itemID, result)) }
            if let cached = shared.cache.tools(for: server.key, now: loop.nanoseconds()) {
                // Answered on the next pass, as a server's answer would be: never inside the
                // actions that asked. The session's own MCP session opens meanwhile, so its first
                // call does not wait for `initialize`.
                _ = loop.schedule(after: 0) { done(.success(cached)) }
                client(for: server, on: loop).prepare()
                return
            }
            if shared.listing[server.key] != nil {
                shared.listing[server.key]?.append(done)
                return
            }
            shared.listing[server.key] = [done]
            let started = loop.nanoseconds()
            client(for: server, on: loop).listTools { result in
                if case .success(let listed) = result { shared.cache.store(listed, for: server.key, now: loop.nanoseconds()) }
                ToolMetrics.shared.listed(result, seconds: Double(loop.nanoseconds() &- started) / 1e9)
                for waiter in shared.listing.removeValue(forKey: server.key) ?? [] { waiter(result) }
            }
        case .call(let itemID, let server, let tool, let arguments):
            // The engine checked the arguments are an object when the model finished them.
            let parsed = (try? JSON(parsing: arguments)) ?? .object([])
            let started = loop.nanoseconds()
            tools.calls[itemID] = client(for: server, on: loop).call(name: tool, arguments: parsed) { [weak self] result in
                ToolMetrics.shared.called(result, seconds: Double(loop.nanoseconds() &- started) / 1e9)
                guard let self else { return }
                self.toolWork?.calls[itemID] = nil
                self.handle(.mcpToolCalled(itemID: itemID, result))
            }
        case .cancel(let itemID):
            if let call = toolWork?.calls.removeValue(forKey: itemID) {
                call.cancel()
                ToolMetrics.shared.cancelled()
            }
        }
    }

    func toolWait(_ step: ToolWaitStep, on loop: EventLoop) {
        toolWork?.fillerTimer?.cancel()
        toolWork?.fillerTimer = nil
        guard case .arm(let token, let afterMs) = step else { return }
        tools.fillerTimer = loop.schedule(after: Double(afterMs) / 1000) { [weak self] in
            self?.toolWork?.fillerTimer = nil
            self?.handle(.toolWaitElapsed(token: token))
        }
    }

    /// The session's client for `server`: one per label and credentials, kept while the session lasts.
    private func client(for server: MCPServerEntry, on loop: EventLoop) -> MCPClient {
        let name = "\(server.label)#\(server.key)"
        if let existing = tools.clients[name] { return existing }
        let made = MCPClient(endpoint: server.endpoint, settings: endpoint.mcpClient, loop: loop)
        tools.clients[name] = made
        return made
    }
}
