import JSON
import Loop
import Upstream

/// The part every HTTP provider shares: send a JSON request on the loop's client, decode the
/// server-sent events of a 200 into model events with a provider-specific `decode`, and turn
/// anything else (a status, a time-out, a dropped connection) into one `.failed`.
final class UpstreamModelCall: ModelCall {
    /// Reads one SSE event's data; returns what it means, if anything, and notes in `Ending`
    /// what it says about the end of the reply.
    typealias Decode = (ServerSentEventParser.Event, inout Ending) -> DecodeResult

    /// What the stream has said so far beyond its events: providers report usage and the stop
    /// reason in events before the last, and number function calls across events.
    struct Ending {
        var usage: Usage?
        var reason = FinishReason.stop
        /// The ids of the reply's function calls so far, by their index among its calls (0 up,
        /// in the order they started).
        var toolCallIDs: [String] = []
        /// Each call's index by the upstream's own number for it (OpenAI's `tool_calls[].index`,
        /// Anthropic's content block index).
        var toolCallIndexes: [Int: Int] = [:]

        /// Numbers a new call `upstreamIndex` (which now names it, if it named an earlier one).
        mutating func startToolCall(_ upstreamIndex: Int?, id: String) -> Int {
            let index = toolCallIDs.count
            toolCallIDs.append(id)
            if let upstreamIndex { toolCallIndexes[upstreamIndex] = index }
            return index
        }
    }

    /// What one SSE event means. One event may carry several model events (text and pieces of
    /// several function calls in one OpenAI chunk), or none; those are deltas and function
    /// calls only, as the end of the reply is `.done` or `.failed`.
    enum DecodeResult {
        case events([ModelEvent])
        case done
        case failed(ModelError)

        static var nothing: DecodeResult { .events([]) }
    }

    private let onEvent: (ModelEvent) -> Void
    private let decode: Decode
    private let serverAdded: ServerAddedLatency
    private var call: HTTPClientCall?
    private var parser = ServerSentEventParser()
    private var status = 0
    private var retryAfter: Double?
    /// A non-200 answer's body, kept (bounded) to quote its error message.
    private var errorBody: [UInt8] = []
    private var ending = Ending()
    private var finished = false
    private let startedAt = MonotonicClock.nanoseconds()
    private var firstDeltaSeen = false

    init(_ request: HTTPClientRequest, on loop: EventLoop, decode: @escaping Decode, onEvent: @escaping (ModelEvent) -> Void) {
        self.onEvent = onEvent
        self.decode = decode
        serverAdded = ServerAddedLatency.on(loop)
        // The callbacks hold this object until the HTTP call ends (it drops them then), so a
        // response still ending after the model finished has somewhere to go.
        call = loop.httpClient.send(request, onHead: { [self] head in
            status = head.status
            retryAfter = head.header("retry-after").flatMap(Double.init)
        }, onBody: { [self] bytes in
            body(bytes)
        }, onEnd: { [self] result in
            end(result)
        })
    }

    /// Aborts the call, unless the model already finished: then the response is left to
    /// complete and keep its connection.
    func cancel() {
        guard !finished else { return }
        finished = true
        call?.cancel()
        call = nil
    }

    private func body(_ bytes: UnsafeRawBufferPointer) {
        guard !finished else { return }
        // Server-added latency runs from here, the upstream bytes in hand, to each delta's frame
        // written: the session frames it inside `onEvent`, the loop writes it when this event is done.
        let receivedAt = MonotonicClock.nanoseconds()
        guard status == 200 else {
            if errorBody.count < 8192 { errorBody += bytes.prefix(8192 - errorBody.count) }
            return
        }
        let events: [ServerSentEventParser.Event]
        do { events = try parser.feed(bytes) } catch { return fail(ModelError(code: "upstream_error", message: "an upstream event was too large")) }
        for event in events where !finished {
            switch decode(event, &ending) {
            case .events(let decoded):
                // The session may cancel the call from inside `onEvent`: nothing more after that.
                for modelEvent in decoded where !finished {
                    guard case .delta = modelEvent else { onEvent(modelEvent); continue }
                    if !firstDeltaSeen {
                        firstDeltaSeen = true
                        UpstreamMetrics.shared.firstToken.observe(nanoseconds: receivedAt &- startedAt)
                    }
                    onEvent(modelEvent)
                    serverAdded.delivered(receivedAt: receivedAt)
                }
            case .done: finish()
            case .failed(let error): fail(error)
            }
        }
    }

    private func end(_ result: Result<Void, HTTPClientError>) {
        call = nil
        guard !finished else { return }
        switch result {
        case .success where status == 200:
            // Some servers end the stream without [DONE]; a clean end of body is as good.
            finish()
        case .success:
            fail(Self.statusError(status, errorBody, retryAfter: retryAfter))
        case .failure(let error):
            let code = [.connectTimeout, .firstByteTimeout, .idleTimeout].contains(error) ? "upstream_timeout" : "upstream_unavailable"
            // A certificate that does not verify will not verify the next time either.
            let retryable = if case .tls = error { false } else { true }
            fail(ModelError(code: code, message: "the language model upstream failed: \(error)", retryable: retryable))
        }
    }

    /// The model is done. The HTTP response is left to end by itself, so its connection goes
    /// back to the pool (cancelling here would close it before the chunked terminator is read);
    /// a server that never ends it is cut off by the client's idle time-out.
    private func finish() {
        finished = true
        onEvent(.finished(ending.usage, reason: ending.reason))
    }

    private func fail(_ error: ModelError) {
        finished = true
        call?.cancel()
        call = nil
        onEvent(.failed(error))
    }

    /// An error from a non-200 answer, quoting the API's own message when its body has one.
    static func statusError(_ status: Int, _ body: [UInt8], retryAfter: Double?) -> ModelError {
        let json = try? JSON(parsing: String(decoding: body, as: UTF8.self))
        let said = json?["error"]?["message"]?.string ?? json?["message"]?.string
        let message = "the language model upstream answered HTTP \(status)" + (said.map { ": \($0)" } ?? "")
        return ModelError(code: status == 429 ? "rate_limited" : "upstream_error", message: message, retryAfter: retryAfter,
                          retryable: status == 429 || status == 408 || status >= 500)
    }
}
