import JSON
import Logging
import Loop
import Upstream

/// The MCP log: what the client did about a server (a session initialised again, a call given up),
/// naming the server by host and port only.
public let mcpLog = Logger(label: "parley.mcp")

/// A client of one MCP server (one URL and one set of credentials) over the Streamable HTTP
/// transport, on one event loop and Parley's own HTTP client: no thread of its own, every callback
/// later on that loop, never inside the method that was called.
///
/// The MCP session is opened when first needed (`initialize`, then `notifications/initialized`)
/// and shared by the operations that follow; its `Mcp-Session-Id`, when the server gives one, and
/// the negotiated `MCP-Protocol-Version` go on every later request (transports, "Session
/// Management" and "Protocol Version Header"). A 404 to a request that carried the session id
/// means the server forgot it: the client initialises again, once, and sends the request again.
///
/// Each operation has one deadline for all it does (initialising, every page of a list, the call);
/// a request it gives up, at its deadline or because the caller cancelled, is cancelled at the
/// server with `notifications/cancelled` (basic/lifecycle, "Timeouts"). Errors carry none of the
/// entry's secrets nor the session id (`MCPRedaction`).
public final class MCPClient {
    /// How long after an operation's deadline its request's own waits end (`request`): the
    /// deadline, which cancels at the server, is always first.
    static let deadlineMargin = 1.0

    public struct Settings: Sendable {
        /// Seconds to connect (TCP, and TLS for https) on each request.
        public var connectTimeout = 5.0
        /// Seconds for a whole `listTools`, every page and any initialisation included.
        public var listTimeout = 10.0
        /// Seconds for a `call`, unless the call names its own.
        public var callTimeout = 60.0
        /// The most bytes one answer may have: a JSON body, or a whole event stream.
        public var maxAnswerBytes = 4 << 20
        /// The most pages and tools a list may have, so a server cannot page forever.
        public var maxPages = 100
        public var maxTools = 1000
        /// `clientInfo.version` in `initialize`.
        public var clientVersion = "1.0"
        public init() {}
    }

    public let endpoint: MCPEndpoint
    public let settings: Settings
    unowned(unsafe) let loop: EventLoop
    private let log: Logger

    private enum SessionState {
        case none
        case initializing(waiters: [(Result<Session, MCPError>) -> Void])
        case ready(Session)
        case closed
    }

    /// An open MCP session: the server's id for it (nil for a stateless server) and the revision.
    struct Session: Equatable {
        let id: String?
        let version: String
    }

    private var state = SessionState.none
    private var redaction: MCPRedaction
    private var nextRequestID = 0
    /// The operations under way, to end at `close()`.
    private var live: [Int: MCPOperation] = [:]
    private var nextOperation = 0

    public init(endpoint: MCPEndpoint, settings: Settings = .init(), loop: EventLoop, log: Logger = mcpLog) {
        self.endpoint = endpoint
        self.settings = settings
        self.loop = loop
        self.log = log
        redaction = MCPRedaction(endpoint.secrets)
    }

    /// Every tool of the server, all pages, within `settings.listTimeout`.
    public func listTools(done: @escaping (Result<[MCPTool], MCPError>) -> Void) {
        let operation = begin(name: "tools/list", seconds: settings.listTimeout) { error in done(.failure(error)) }
        var tools: [MCPTool] = []
        var seen: Set<String> = []
        func fetch(_ cursor: String?) {
            request(operation, { MCPMessage.listTools(id: $0, cursor: cursor) }) { [self] result in
                switch result.flatMap(MCPTool.page) {
                case .failure(let error): finish(operation, error)
                case .success(let page):
                    tools += page.tools
                    guard let next = page.nextCursor else {
                        guard operation.end() else { return }
                        return done(.success(tools))
                    }
                    if tools.count > settings.maxTools { return finish(operation, .malformed("the server lists more than \(settings.maxTools) tools")) }
                    if seen.count >= settings.maxPages { return finish(operation, .malformed("the server's list runs past \(settings.maxPages) pages")) }
                    guard seen.insert(next).inserted else { return finish(operation, .malformed("the server gave the same cursor twice")) }
                    fetch(next)
                }
            }
        }
        guard operation.isRunning else { return }
        fetch(nil)
    }

    /// Calls tool `name` with `arguments` (a JSON object); `done` gets its output, or why not,
    /// within `timeout` seconds (`settings.callTimeout` when nil). Cancelling the returned call
    /// gives up on it: `done` is not called, and the server is told.
    @discardableResult
    public func call(name: String, arguments: JSON, timeout: Double? = nil,
                     done: @escaping (Result<MCPToolOutput, MCPError>) -> Void) -> MCPCall {
        let operation = begin(name: "tools/call", seconds: timeout ?? settings.callTimeout) { error in done(.failure(error)) }
        let handle = MCPCall { [self] in cancel(operation, reason: "cancelled by the caller") }
        guard operation.isRunning else { return handle }
        request(operation, { MCPMessage.callTool(id: $0, name: name, arguments: arguments) }) { [self] result in
            switch result.flatMap(MCPToolOutput.decode) {
            case .failure(let error): finish(operation, error)
            case .success(let output):
                guard operation.end() else { return }
                done(.success(output))
            }
        }
        return handle
    }

    /// Opens the MCP session now, if none is open or opening: a session whose tools came from the
    /// cache would otherwise pay `initialize` and its notification on its first call (two round
    /// trips: docs/benchmarks.md, "MCP tools"). A failure here is the first call's to meet again.
    public func prepare() {
        guard case .none = state else { return }
        let operation = begin(name: "initialize", seconds: settings.listTimeout) { _ in }
        guard operation.isRunning else { return }
        withSession(operation) { _ in _ = operation.end() }
    }

    /// Ends the client: operations under way stop without calling back (a call's request is
    /// cancelled at the server), and the session, if the server gave one, is ended with a DELETE
    /// (transports, "Session Management" 5). Later operations fail with `.closed`.
    public func close() {
        if case .closed = state { return }
        let session: Session? = if case .ready(let session) = state { session } else { nil }
        let waiting: [(Result<Session, MCPError>) -> Void] = if case .initializing(let waiters) = state { waiters } else { [] }
        state = .closed
        for operation in live.values.sorted(by: { $0.number < $1.number }) { cancel(operation, reason: "the client closed") }
        for waiter in waiting { waiter(.failure(.closed)) }
        if let session { end(session) }
    }

    /// DELETE for a session the server gave an id; a server may refuse it with 405, and nothing
    /// waits for the answer.
    private func end(_ session: Session) {
        guard session.id != nil else { return }
        var request = httpRequest(method: "DELETE", body: [], session: session)
        request.timeouts.firstByte = settings.connectTimeout
        request.timeouts.idle = settings.connectTimeout
        loop.httpClient.send(request, onEnd: { _ in })
    }

    // MARK: Operations

    /// Starts an operation with its deadline; `fail` reports its failure (its success is reported
    /// by the caller, after `end()`).
    private func begin(name: String, seconds: Double, fail: @escaping (MCPError) -> Void) -> MCPOperation {
        nextOperation += 1
        let operation = MCPOperation(number: nextOperation, name: name, seconds: seconds, report: fail)
        if case .closed = state {
            operation.isRunning = false
            loop.schedule(after: 0) { fail(.closed) }
            return operation
        }
        live[operation.number] = operation
        operation.ended = { [weak self] in self?.live[operation.number] = nil }
        operation.deadline = loop.schedule(after: seconds) { [weak self, weak operation] in
            guard let self, let operation, operation.isRunning else { return }
            log.info("MCP request timed out", metadata: ["server": "\(endpoint)", "operation": "\(name)", "seconds": "\(seconds)"])
            cancelAtServer(operation, reason: "timed out after \(seconds) s")
            finish(operation, .timedOut(operation: name, seconds: seconds))
        }
        return operation
    }

    private func finish(_ operation: MCPOperation, _ error: MCPError) {
        guard operation.end() else { return }
        operation.report(redaction.scrub(error))
    }

    /// Gives up on `operation` without calling back, telling the server.
    private func cancel(_ operation: MCPOperation, reason: String) {
        guard operation.isRunning else { return }
        cancelAtServer(operation, reason: reason)
        _ = operation.end()
    }

    /// `notifications/cancelled` for the operation's request in flight, if it has one (never for
    /// `initialize`, which is not the operation's: basic/utilities/cancellation 2).
    private func cancelAtServer(_ operation: MCPOperation, reason: String) {
        operation.http?.cancel()
        operation.http = nil
        guard let (requestID, session) = operation.inFlight else { return }
        operation.inFlight = nil
        post(MCPMessage.cancelled(requestID: requestID, reason: reason), id: nil, session: session, seconds: settings.connectTimeout) { _, _ in }
    }

    /// Sends one request of `operation` in the session (opening it first if need be), and a
    /// second time in a new session if the server forgot the first.
    private func request(_ operation: MCPOperation, _ message: @escaping (Int) -> JSON, retried: Bool = false,
                         then: @escaping (Result<JSON, MCPError>) -> Void) {
        withSession(operation) { [self] opened in
            guard operation.isRunning else { return }
            let session: Session
            switch opened {
            case .failure(let error): return then(.failure(error))
            case .success(let value): session = value
            }
            nextRequestID += 1
            let id = nextRequestID
            operation.inFlight = (id, session)
            // The request's own waits end after the operation's deadline, never with it: the two
            // timers fell due at one moment, and when the request's fired first the call ended as
            // timed out with no `notifications/cancelled` sent (seen once in make test).
            operation.http = post(message(id), id: id, session: session, seconds: operation.remaining + Self.deadlineMargin) { [self] outcome, _ in
                guard operation.isRunning else { return }
                operation.inFlight = nil
                operation.http = nil
                switch outcome {
                case .result(let result): then(.success(result))
                case .failed(let error): then(.failure(error))
                case .sessionGone where !retried:
                    log.info("MCP server forgot the session; initialising again", metadata: ["server": "\(endpoint)"])
                    if case .ready(let current) = state, current == session { state = .none }
                    request(operation, message, retried: true, then: then)
                case .sessionGone, .needMore:
                    then(.failure(.status(404, "the server forgot the session again")))
                }
            }
        }
    }

    // MARK: The session

    private func withSession(_ operation: MCPOperation, _ body: @escaping (Result<Session, MCPError>) -> Void) {
        switch state {
        case .ready(let session):
            body(.success(session))
        case .initializing(let waiters):
            state = .initializing(waiters: waiters + [body])
        case .closed:
            body(.failure(.closed))
        case .none:
            state = .initializing(waiters: [body])
            // Past the operation's deadline, as a request's waits are (`deadlineMargin`): the two
            // fell due at one moment, and when the POST's fired first the list ended as "the
            // request" timed out, not tools/list (seen once in the Swift suite, 2026-11-28).
            initialize(seconds: operation.remaining + Self.deadlineMargin)
        }
    }

    /// `initialize`, then `notifications/initialized` once it is answered (basic/lifecycle,
    /// "Initialization"): the server may refuse requests until that notification has arrived, and
    /// separate POSTs may overtake each other, so requests wait for its 202.
    private func initialize(seconds: Double) {
        nextRequestID += 1
        let id = nextRequestID
        post(MCPMessage.initialize(id: id, clientVersion: settings.clientVersion), id: id, session: nil, seconds: seconds) { [self] outcome, sessionID in
            let version: String
            switch outcome {
            case .result(let result):
                switch MCPMessage.negotiatedVersion(result) {
                case .failure(let error): return opened(.failure(error))
                case .success(let negotiated): version = negotiated
                }
            case .failed(let error): return opened(.failure(error))
            case .sessionGone, .needMore: return opened(.failure(.status(404, nil)))
            }
            if let sessionID { redaction.add(sessionID) }
            let session = Session(id: sessionID, version: version)
            post(MCPMessage.initialized, id: nil, session: session, seconds: seconds) { [self] outcome, _ in
                switch outcome {
                case .failed(let error): opened(.failure(error))
                default: opened(.success(session))
                }
            }
        }
    }

    private func opened(_ result: Result<Session, MCPError>) {
        guard case .initializing(let waiters) = state else {
            // Closed while the session was opening: end it at the server too.
            if case .success(let session) = result { end(session) }
            return
        }
        switch result {
        case .success(let session): state = .ready(session)
        case .failure: state = .none
        }
        for waiter in waiters { waiter(result) }
    }

    // MARK: HTTP

    /// POSTs one message and reads its answer; `done` gets the outcome and the session id the
    /// answer's head gave, if any. The HTTP call is returned so an operation can abort it.
    @discardableResult
    private func post(_ message: JSON, id: Int?, session: Session?, seconds: Double,
                      done: @escaping (MCPAnswerReader.Outcome, String?) -> Void) -> HTTPClientCall {
        var request = httpRequest(method: "POST", body: Array(message.description.utf8), session: session)
        request.timeouts.firstByte = max(seconds, 0.001)
        request.timeouts.idle = max(seconds, 0.001)
        var reader = MCPAnswerReader(id: id, limit: settings.maxAnswerBytes, carriedSession: session?.id != nil)
        var sessionID: String?
        var answered = false
        var http: HTTPClientCall?
        func settle(_ outcome: MCPAnswerReader.Outcome) {
            guard outcome != .needMore, !answered else { return }
            answered = true
            // An event stream may go on after our response, and a refused answer is not read:
            // either way the connection is dropped rather than drained.
            http?.cancel()
            http = nil
            done(outcome, sessionID)
        }
        http = loop.httpClient.send(request, onHead: { head in
            sessionID = MCPAnswerReader.sessionID(head.header("mcp-session-id"))
            settle(reader.head(status: head.status, contentType: head.header("content-type"), contentLength: head.header("content-length")))
        }, onBody: { bytes in
            settle(reader.body(bytes))
        }, onEnd: { result in
            http = nil
            switch result {
            case .success: settle(reader.end())
            case .failure(let error): settle(.failed(Self.transportError(error, seconds: seconds)))
            }
        })
        return http!
    }

    private func httpRequest(method: String, body: [UInt8], session: Session?) -> HTTPClientRequest {
        var headers: [(String, String)] = [("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream")]
        if let authorization = endpoint.authorization { headers.append(("Authorization", authorization)) }
        headers += endpoint.headers
        if let session {
            if let id = session.id { headers.append(("Mcp-Session-Id", id)) }
            headers.append(("MCP-Protocol-Version", session.version))
        }
        var request = HTTPClientRequest(method: method, url: endpoint.url, headers: headers, body: body)
        request.timeouts.connect = settings.connectTimeout
        return request
    }

    /// The HTTP client's failure as an MCP error: a time-out of the response as the operation's
    /// (its deadline fires too, and says which operation); the rest as an unreachable server.
    static func transportError(_ error: HTTPClientError, seconds: Double) -> MCPError {
        switch error {
        case .firstByteTimeout, .idleTimeout: .timedOut(operation: "the request", seconds: seconds)
        case .malformedResponse(let why): .notMCP("not an HTTP/1.1 answer (\(why))")
        default: .unreachable(error.description)
        }
    }
}

/// A tool call under way; `cancel()` gives up on it (its `done` is not called) and tells the
/// server with `notifications/cancelled`. What a barge-in calls.
public final class MCPCall {
    private var onCancel: (() -> Void)?

    init(_ onCancel: @escaping () -> Void) {
        self.onCancel = onCancel
    }

    public func cancel() {
        let action = onCancel
        onCancel = nil
        action?()
    }
}

/// One list or call: its deadline, the HTTP call and the request it has in flight.
final class MCPOperation {
    let number: Int
    let name: String
    let report: (MCPError) -> Void
    var isRunning = true
    var deadline: ScheduledTask?
    var http: HTTPClientCall?
    /// The request awaiting its answer, and the session it went in: what a cancellation names.
    var inFlight: (id: Int, session: MCPClient.Session)?
    var ended: (() -> Void)?
    private let startedAt = MonotonicClock.nanoseconds()
    private let seconds: Double

    init(number: Int, name: String, seconds: Double, report: @escaping (MCPError) -> Void) {
        self.number = number
        self.name = name
        self.seconds = seconds
        self.report = report
    }

    /// Seconds left before the deadline.
    var remaining: Double { max(0.001, seconds - Double(MonotonicClock.nanoseconds() &- startedAt) / 1e9) }

    /// Stops the operation; false if it had stopped already (so only one outcome is reported).
    func end() -> Bool {
        guard isRunning else { return false }
        isRunning = false
        deadline?.cancel()
        deadline = nil
        http?.cancel()
        http = nil
        inFlight = nil
        ended?()
        ended = nil
        return true
    }
}
