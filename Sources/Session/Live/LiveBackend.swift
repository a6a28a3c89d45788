import Access
import Loop
import Models
import SessionEngine

/// A Live session's Responses backend (`delegation: responses`): a text session of its own on the
/// same engine, with the delegation's instructions, function tools and MCP servers, run by a
/// `SessionDriver` as any session is (model calls on the loop, MCP calls, limits). It has no
/// client socket: what it says reaches the Live session's client through `LiveResponsesEvents`,
/// as `response.event` envelopes, and its answers are spoken by the voice front.
final class LiveBackend: SessionWire {
    private(set) var driver: SessionDriver!
    private var events = LiveResponsesEvents()
    /// Where its outcomes go: the Live session's handler.
    private let deliver: (LiveResponsesEvents.Outcome) -> Void
    var endpointName: String { "/v1/live/sessions (responses)" }

    init(endpoint: RealtimeEndpoint, caller: Caller, delegation: LiveResponsesDelegation, on loop: EventLoop,
         deliver: @escaping (LiveResponsesEvents.Outcome) -> Void) {
        self.deliver = deliver
        var options = SessionEngine.Options(model: delegation.model, maxHistoryTextBytes: endpoint.limits.maxHistoryBytes)
        options.tooling = endpoint.tooling
        // Its settings are the delegation's: refused ones (an MCP server off the allow-list) come
        // back as errors when it starts.
        try? options.configuration.apply(delegation.engineUpdate, allowsOpus: false)
        // The Live session holds the tenant's place; its backend takes none of its own.
        driver = SessionDriver(endpoint: endpoint, admitted: Admitted(caller: caller, lease: nil), options: options, wire: self)
        driver.open(ParkedSocket(loop: loop))
    }

    /// A task the front delegated, with the conversation it came from.
    func run(task: String, conversation: [ChatMessage]) {
        let said = conversation.filter { ($0.role == .user || $0.role == .assistant) && !$0.text.isEmpty }.suffix(12)
        var text = "Task: \(task)"
        if !said.isEmpty {
            text += "\n\nThe conversation so far:\n" + said.map { "\($0.role == .user ? "user" : "assistant"): \($0.text)" }.joined(separator: "\n")
        }
        driver.handle(.client(ClientEvent(.conversationItemCreate(NewConversationItem(role: .user, text: text)))))
        driver.createResponse()
    }

    func handle(_ event: ClientEvent) { driver.handle(.client(event)) }

    func close() { driver.close(.ended) }

    // MARK: SessionWire

    func send(_ event: ServerEvent, on socket: any SessionSocket) {
        for outcome in events.translate(event) {
            if outcome == .continues { driver.createResponse() } else { deliver(outcome) }
        }
    }

    func sendAudio(_ piece: SpeechOutput.Piece, at: ContentLocation, on socket: any SessionSocket) {}
}
