import JSON
import Models

/// Who handles the tasks a Live session's voice front delegates (`session.delegation`).
///
/// The front delegates by calling the `delegate` function Parley gives its language model (the
/// model that speaks sees one tool, whatever the backend's tools are). With `client` (or no
/// delegation) the application gets `session.delegation.created` and answers with
/// `session.commentary.append` (spoken) or `session.thinking.append` (silent). With `responses`
/// the task goes to the session's backend (`LiveResponsesDelegation`), whose answer is spoken.
package enum LiveDelegation: Sendable, Equatable {
    case client(acknowledgementDelayMs: Int?)
    /// `responses`; in an update, nil keeps the backend as it is.
    case responses(LiveResponsesDelegation?, acknowledgementDelayMs: Int?)

    /// The acknowledgement's delay: OpenAI's default is 0 (at once) outside Decisions sessions.
    package var acknowledgementDelayMs: Int {
        switch self {
        case .client(let delay), .responses(_, let delay): delay ?? 0
        }
    }

    /// The backend, for `responses`.
    package var backend: LiveResponsesDelegation? {
        if case .responses(let backend, _) = self { backend } else { nil }
    }

    /// The longest acknowledgement delay taken: a minute (a longer one would never be heard).
    package static let maxAcknowledgementDelayMs = 60_000

    /// `delegation` of `session.start` (nil or absent: the application's).
    package static func parse(_ fields: EventFields?, update: Bool = false) throws(ProtocolError) -> LiveDelegation {
        guard let fields else { return .client(acknowledgementDelayMs: nil) }
        let type = try fields.requiredString("type")
        switch type {
        case "client":
            try fields.refuseUnknown(["type", "acknowledgement_delay_ms"])
            return .client(acknowledgementDelayMs: try fields.integer("acknowledgement_delay_ms", in: 0...maxAcknowledgementDelayMs))
        case "responses":
            try fields.refuseUnknown(["type", "acknowledgement_delay_ms", "responses"])
            let delay = try fields.integer("acknowledgement_delay_ms", in: 0...maxAcknowledgementDelayMs)
            guard let backend = try fields.object("responses") else {
                if update { return .responses(nil, acknowledgementDelayMs: delay) }
                throw fields.missing("responses")
            }
            return .responses(try LiveResponsesDelegation.parse(backend, update: update), acknowledgementDelayMs: delay)
        case "decisions":
            throw ProtocolError(.unsupportedValue, "Decisions delegation is not supported by Parley: use 'client' delegation (docs/protocol.md, \"GPT-Live\")",
                                param: fields.name("type"))
        default:
            throw fields.invalid("type", "must be 'client', 'responses' or 'decisions', got '\(type)'")
        }
    }

    /// This delegation, as a `session.update` that gave `next` changes it: an omitted delay keeps
    /// the current one ("Omission in a session update preserves the current value").
    package func updated(to next: LiveDelegation) -> LiveDelegation {
        switch (self, next) {
        case (.client(let old), .client(.none)): return .client(acknowledgementDelayMs: old)
        case (.responses(let backend, let old), .responses(let given, let delay)):
            // The backend's fields given replace its own; the others stay.
            let merged = given.map { given in backend?.updated(by: given) ?? given } ?? backend
            return .responses(merged, acknowledgementDelayMs: delay ?? old)
        default: return next
        }
    }

    package var json: JSON {
        switch self {
        case .client(let delay):
            .object([("type", .string("client"))] + (delay.map { [("acknowledgement_delay_ms", JSON.int($0))] } ?? []))
        case .responses(let backend, let delay):
            .object([("type", .string("responses"))] + (delay.map { [("acknowledgement_delay_ms", JSON.int($0))] } ?? [])
                    + [("responses", backend?.json ?? .object([]))])
        }
    }

    package var target: String {
        switch self {
        case .client: "client"
        case .responses: "responses"
        }
    }

    /// The function the voice front calls to delegate: its one tool.
    package static let toolName = "delegate"
    package static let tool = ToolDefinition(
        name: toolName,
        description: "Hand a task that needs a lookup, a tool or an action to the backend. Say briefly that you are on it; the result comes back to you.",
        parameters: .object([
            ("type", .string("object")),
            ("properties", .object([("task", .object([("type", .string("string")), ("description", .string("The task, in the user's words"))]))])),
            ("required", .array([.string("task")])),
        ]))
}
