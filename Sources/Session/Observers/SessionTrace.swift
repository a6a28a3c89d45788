import Loop
import Models
import Telemetry
import Tracing
import SessionEngine

/// One session's trace (docs/operations.md, "Traces"): a span for the session (a child of the
/// client's `traceparent` when the upgrade carried one), a span per turn, and within each the
/// stages of `TurnTimeline`, the model call (model name, tokens in and out; its `traceparent` goes
/// to the upstream) and each tool call; resumes, drains and errors are events on the session's
/// span. Made only when tracing is on, fed the session's facts (`SessionFact`); a trace that is not
/// sampled costs its ids and nothing is exported.
final class SessionTrace {
    private let tracer: ParleyTracer
    let session: ParleySpan
    /// The turn in progress: from its user's turn (or a response asked for) to its `response.done`.
    private var turn: ParleySpan?
    private var models: [String: ParleySpan] = [:]
    private var tools: [String: ParleySpan] = [:]

    init(tracer: ParleyTracer, traceparent: String?, attributes: [(String, String)]) {
        self.tracer = tracer
        var parent = InstrumentationContext.topLevel
        if let traceparent, let context = TraceContext(traceparent: traceparent) { parent.trace = context }
        session = tracer.startSpan("parley.session", context: parent, ofKind: .server)
        session.updateAttributes { for (key, value) in attributes { $0[key] = value } }
    }

    private var turnContext: InstrumentationContext { (turn ?? session).context }

    /// What happened in the session, as its spans and their events.
    func observe(_ fact: SessionFact, at now: UInt64) {
        switch fact {
        case .responseBegan(let responseID, _):
            if turn == nil { startTurn(at: now) }
            turn?.attributes["gen_ai.response.id"] = responseID
        case .toolCalled(_, let callID, let name, _):
            let span = tracer.startSpan("tool \(name)", context: turnContext, ofKind: .internal, at: WallInstant(monotonic: now))
            span.attributes["gen_ai.tool.name"] = name
            span.attributes["gen_ai.tool.call.id"] = callID
            tools[callID] = span
        case .toolReturned(let callID):
            tools.removeValue(forKey: callID)?.end(at: WallInstant(monotonic: now))
        case .mcpCallBegan(_, let itemID, let label, let tool):
            // The label is the client's name for the server; its URL, which may carry a key, is not traced.
            let span = tracer.startSpan("mcp \(tool)", context: turnContext, ofKind: .client, at: WallInstant(monotonic: now))
            span.attributes["gen_ai.tool.name"] = tool
            span.attributes["parley.mcp.server_label"] = label
            tools[itemID] = span
        case .mcpCallEnded(_, let itemID, let error):
            guard let span = tools.removeValue(forKey: itemID) else { break }
            if let error { span.setStatus(SpanStatus(code: .error, message: error)) }
            span.end(at: WallInstant(monotonic: now))
        case .fillerSaid:
            (turn ?? session).addEvent(SpanEvent(name: "filler", at: WallInstant(monotonic: now)))
        case .responseEnded(let response):
            if let usage = response.usage, let model = models[response.id] {
                model.attributes["gen_ai.usage.input_tokens"] = usage.inputTokens
                model.attributes["gen_ai.usage.output_tokens"] = usage.outputTokens
            }
            models.removeValue(forKey: response.id)?.end(at: WallInstant(monotonic: now))
            guard let turn else { break }
            turn.attributes["parley.response.status"] = response.status.rawValue
            if response.status == .failed { turn.setStatus(SpanStatus(code: .error, message: "the response failed")) }
            turn.end(at: WallInstant(monotonic: now))
            self.turn = nil
        case .replyCut(_, let audioEndMs):
            (turn ?? session).addEvent(SpanEvent(name: "barge_in", at: WallInstant(monotonic: now), attributes: ["parley.audio_end_ms": .int64(Int64(audioEndMs))]))
        case .error(let error):
            session.addEvent(SpanEvent(name: "error", at: WallInstant(monotonic: now), attributes: ["error.type": .string(error.code)]))
        case .sessionResumed:
            session.addEvent(SpanEvent(name: "resume", at: WallInstant(monotonic: now)))
        case .answeredBy(let verdict):
            session.attributes["parley.answered_by"] = verdict.answer.rawValue
        default:
            break
        }
    }

    /// The session's id, once it has one to say.
    func identify(_ sessionID: String) {
        session.attributes["session.id"] = sessionID
    }

    /// The user's turn ended (`speech_stopped`): its span begins at the user's last word.
    func turnEnded(lastWordAt: UInt64) {
        turn?.end(at: WallInstant(monotonic: lastWordAt))
        startTurn(at: lastWordAt)
    }

    private func startTurn(at now: UInt64) {
        turn = tracer.startSpan("parley.turn", context: session.context, ofKind: .internal, at: WallInstant(monotonic: now))
    }

    /// The turn's stages, once its timeline is complete: one child span each.
    func stages(_ timeline: TurnTimeline) {
        for stage in timeline.intervals() {
            tracer.startSpan(stage.name, context: turnContext, ofKind: .internal, at: WallInstant(monotonic: stage.start))
                .end(at: WallInstant(monotonic: stage.end))
        }
    }

    /// A model call begins: its span, and the `traceparent` to send upstream.
    func modelCall(_ responseID: String, model: String, at now: UInt64) -> String? {
        let span = tracer.startSpan("chat \(model)", context: turnContext, ofKind: .client, at: WallInstant(monotonic: now))
        span.attributes["gen_ai.operation.name"] = "chat"
        span.attributes["gen_ai.request.model"] = model
        models[responseID] = span
        return span.context.trace?.traceparent
    }

    /// An upstream attempt failed and another began (a retry, or the fallback).
    func modelRetried(_ responseID: String, upstream: String, after: String, at now: UInt64) {
        models[responseID]?.addEvent(SpanEvent(name: "upstream_retry", at: WallInstant(monotonic: now),
                                               attributes: ["parley.upstream": .string(upstream), "error.type": .string(after)]))
    }

    func modelFailed(_ responseID: String, code: String, at now: UInt64) {
        guard let span = models.removeValue(forKey: responseID) else { return }
        span.setStatus(SpanStatus(code: .error, message: code))
        span.attributes["error.type"] = code
        span.end(at: WallInstant(monotonic: now))
    }

    func event(_ name: String, _ attributes: SpanAttributes = [:]) {
        session.addEvent(SpanEvent(name: name, at: WallInstant(monotonic: MonotonicClock.nanoseconds()), attributes: attributes))
    }

    /// The session ended: whatever is open ends with it.
    func end(code: Int, at now: UInt64) {
        for span in Array(models.values) + Array(tools.values) + [turn].compactMap({ $0 }) { span.end(at: WallInstant(monotonic: now)) }
        models = [:]
        tools = [:]
        turn = nil
        session.attributes["parley.close_code"] = code
        session.end(at: WallInstant(monotonic: now))
    }
}
