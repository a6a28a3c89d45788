import Loop

/// What a response asks of a model.
public struct ModelRequest: Sendable {
    public var messages: [ChatMessage]
    public var maxOutputTokens: Int?
    /// The functions the model may call; none when nil or empty.
    public var tools: ToolSet?
    public var toolChoice: ToolChoice
    /// The W3C `traceparent` of the call's span, sent to an upstream so that its trace joins the
    /// session's; nil without tracing.
    public var traceparent: String?
    /// The user's language, set by the session or found from its turns (ISO-639-1); nil: English
    /// or not known. An upstream model reads it in the instructions (`LanguageInstruction`); the
    /// built-in agent, which speaks only English, says so.
    public var language: String?

    public init(messages: [ChatMessage], maxOutputTokens: Int? = nil, tools: ToolSet? = nil, toolChoice: ToolChoice = .auto) {
        self.messages = messages
        self.maxOutputTokens = maxOutputTokens
        self.tools = tools
        self.toolChoice = toolChoice
    }
}

/// Why a model's response failed, in the words the client's `error` event will use.
public struct ModelError: Error, Sendable, Equatable, CustomStringConvertible {
    /// e.g. `upstream_error`, `rate_limited`, `upstream_timeout`, `upstream_unavailable`.
    public let code: String
    public let message: String
    /// Seconds the upstream asked us to wait (429 Retry-After), if it said.
    public let retryAfter: Double?
    /// Whether asking again may go better: a 429, a 5xx, a connection that failed or timed out;
    /// not a 4xx that says the request itself is wrong.
    public let retryable: Bool
    /// Why, when a model served by another process failed (the speech helper: a transcription's
    /// or a verdict's error carries it on): what callers switch on instead of matching `code`.
    public let failure: ModelFailure?

    /// `message` is scrubbed of every secret here (`Secrets`), where every model error is made:
    /// an upstream may quote the key it was sent, and the error goes on to logs, traces, reports
    /// and the client's `error` event, none of which may see it.
    public init(code: String, message: String, retryAfter: Double? = nil, retryable: Bool = false, failure: ModelFailure? = nil) {
        self.code = code
        self.message = Secrets.scrub(message)
        self.retryAfter = retryAfter
        self.retryable = retryable
        self.failure = failure
    }

    public var description: String { "\(code): \(message)" }
}

/// Why a call to a model served by another process (the speech helper) failed, in the terms its
/// callers switch on (`ModelError.failure`), never the error's text.
public enum ModelFailure: Sendable, Equatable {
    /// No answer within the request's deadline.
    case timeout
    /// The server is down or starting, the connection was lost, or it speaks another protocol version.
    case unavailable
    /// The server answered with an error: its own code (`SpeechHelperContract.ErrorCode`'s raw value).
    case refused(String)
}

/// What a streaming model call reports, in order: text deltas and function calls, then exactly
/// one of finished or failed. A call opens with `toolCallStarted` (its index among this reply's
/// calls, its id and the function) and its arguments follow in pieces; calls may interleave.
public enum ModelEvent: Sendable, Equatable {
    case delta(String)
    case toolCallStarted(index: Int, id: String, name: String)
    case toolCallArgumentsDelta(index: Int, String)
    /// Usage when the model reported it (nil to have the session estimate it), and why it stopped.
    case finished(Usage?, reason: FinishReason = .stop)
    case failed(ModelError)
    /// The call's last attempt failed before anything of its reply came and another begins (on
    /// `upstream`, its circuit's label: the same one again, or a fallback); nothing for the
    /// client, an event for the call's trace.
    case retrying(upstream: String, after: String)
}

/// Why a model ended its reply.
public enum FinishReason: Sendable, Equatable {
    /// It said all it meant to.
    case stop
    /// It reached its output token limit (OpenAI `finish_reason: "length"`, Anthropic
    /// `stop_reason: "max_tokens"`): the reply is cut short.
    case length
    /// It called functions and waits for their results (OpenAI `tool_calls`, Anthropic `tool_use`).
    case toolCalls
}

/// A model call in flight. `cancel()` aborts it upstream; no event follows it.
public protocol ModelCall: AnyObject {
    func cancel()
}

/// A language model provider. Providers are configuration, shared by every loop; each call runs
/// on the loop it is given, and reports its events there.
public protocol LanguageModel: Sendable {
    /// For logs and metrics: "builtin", "openai", "anthropic".
    var name: String { get }
    /// What the session says instead of the reply when the model failed for a passing reason
    /// (rate limits, outages, stalls: `ModelError.retryable`), after telling the client the error;
    /// nil: the response just fails.
    var apology: String? { get }
    func stream(_ request: ModelRequest, on loop: EventLoop, _ onEvent: @escaping (ModelEvent) -> Void) -> any ModelCall
}

extension LanguageModel {
    public var apology: String? { nil }
}
