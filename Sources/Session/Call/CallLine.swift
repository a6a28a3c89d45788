import JSON
import Loop
import Server
import SessionEngine

/// A call as the outside reaches it by its id (`CallDirectory`): sideband WebSockets
/// (`/v1/realtime?call_id=…`, `/v1/live/sessions/{id}/attach`) and call control
/// (`POST …/{id}/accept|reject|refer|hangup`). One object from the moment the call is offered or
/// placed to its end, whichever carrier holds it (a placed call's dialer, then the call it
/// became) and whichever API speaks over it: sidebands that attach before its conversation
/// begins wait here and hear its progress (a placed call's ringing); once it has one, they are
/// the conversation's, which speaks its API's dialect to them; call control goes to the carrier.
/// Every method runs on the call's loop.
///
/// It keeps the call's story (issue 73): every progress event (ringing, answered, answered_by, a
/// failure, keys sent, GPT-Live's `session.closed`), replayed in order and once to a sideband that
/// attaches later, before its live events, so that one attached after reading the 201 misses
/// nothing a fast callee already said. An ended call stays listed for `KeptCalls.keepSeconds`: a
/// sideband then gets the story and a close that says how it ended, and `GET` on the call's URL
/// answers its status and story.
package final class CallLine {
    package let id: String
    package let loop: EventLoop
    /// What answers call control: the dialer while a placed call rings, then the call.
    package weak var carrier: (any CallCarrier)?
    package private(set) var conversation: (any CallConversation)?
    /// Sidebands attached before the conversation began (while the webhook decides, a placed
    /// call rings, a browser's data channel opens).
    private var waiting = CallSidebands()
    /// Where the call is, as `GET` says it.
    package private(set) var status = Status.offered
    package var hasEnded: Bool { status == .ended }
    /// Why it ended, in the carrier's word (`hangup`, `remote_hangup`, `busy`, `unreachable`, …).
    package private(set) var endedReason: String?
    /// Its progress events, in the API's dialect, in order; at most `storyLimit`.
    private var story: [String] = []
    static let storyLimit = 64

    package enum Status: String, Sendable {
        /// Offered to Parley or placed by it, not yet ringing.
        case offered
        case ringing
        /// Answered: the conversation speaks.
        case answered
        case ended
    }

    package init(id: String, on loop: EventLoop) {
        self.id = id
        self.loop = loop
    }

    /// What it holds: itself, its story and the sidebands that wait (the conversation accounts its own).
    package var heapBytes: Int {
        HeapSize.of(self) + HeapSize.of(id) + waiting.heapBytes + HeapSize.of(story) + story.reduce(0) { $0 + HeapSize.of($1) }
            + (endedReason.map(HeapSize.of) ?? 0)
    }

    /// Listed: sidebands and call control find it by its id from now on.
    package func list() { CallDirectory.shared.add(id, self, on: loop) }

    /// The call's conversation begins: the sidebands that waited are its own from now on.
    package func converse(_ made: any CallConversation) {
        made.adopt(waiting)
        made.joined(self)
        waiting = CallSidebands()
        conversation = made
    }

    /// A progress event (text, in the API's dialect), kept, and told to the sidebands that wait
    /// for the conversation: a placed call's `transport.ringing`, `answered`, `failed`.
    package func progress(_ text: String) {
        keep(text)
        waiting.send(text: text)
    }

    /// A progress event the conversation told its own sidebands (who answered, a key sent),
    /// kept for those that attach later.
    package func keep(_ text: String) {
        if story.count < Self.storyLimit { story.append(text) }
    }

    package func moved(to status: Status) {
        if !hasEnded { self.status = status }
    }

    /// The call is over (`reason`: the carrier's word for why): the sidebands that still wait
    /// close, and it stays listed, readable, for a while (`KeptCalls`). (The carrier closes the
    /// conversation, with the reason its carrier knows.)
    package func end(reason: String) {
        guard !hasEnded else { return }
        status = .ended
        endedReason = reason
        waiting.closeAll(reason: closeReason)
        conversation = nil
        carrier = nil
        KeptCalls.on(loop).keep(self)
    }

    /// What a sideband's close says once the call is over: how it ended, in the carrier's word
    /// (`the call ended: caller_bye`), for a sideband attached then as for one attached later.
    package var closeReason: String { "the call ended" + (endedReason.map { ": \($0)" } ?? "") }

    /// The call as `GET` on its URL answers it: its id, status, story and, once over, how it ended.
    /// (`object`: `realtime.call`, or `live.session` for a GPT-Live session's line.)
    package func document(object: String = "realtime.call") -> JSON {
        var fields: [(String, JSON)] = [("id", .string(id)), ("object", .string(object)), ("status", .string(status.rawValue))]
        if let endedReason { fields.append(("ended_reason", .string(endedReason))) }
        fields.append(("events", .array(story.map { (try? JSON(parsing: $0)) ?? .string($0) })))
        return .object(fields)
    }

    // MARK: Reached from outside

    /// A sideband WebSocket (on `remote`'s loop) gets the call's events from now on.
    /// The story so far first, then the live events (both go through `remote`'s inbox, first in,
    /// first out, so they stay in order); an ended call's story, then its close.
    package func attach(sideband: Handoff<WebSocket>, on remote: LoopHandle, id: ObjectIdentifier) {
        let told = story, ended = hasEnded, reason = closeReason
        if !told.isEmpty || ended {
            remote.execute {
                for text in told { sideband.value.send(text: text) }
                if ended { sideband.value.close(.normal, reason: reason) }
            }
        }
        guard !ended else { return }
        guard let conversation else { return waiting.attach(sideband, on: remote, id: id, home: loop) }
        conversation.attach(sideband: sideband, on: remote, id: id)
    }

    package func detach(sideband id: ObjectIdentifier) {
        conversation?.detach(sideband: id)
        waiting.detach(id)
    }

    /// A client event from a sideband, as text: the conversation's, once there is one.
    package func receive(sidebandText text: String) { conversation?.receive(sidebandText: text) }

    package func control(_ action: CallControl) { carrier?.control(action) }
}

/// The carrier's side of call control (a SIP call answers all of it; a WebRTC call, a media stream
/// and a GPT-Live session only a hangup). Runs on the call's loop.
package protocol CallCarrier: AnyObject {
    func control(_ action: CallControl)
}

/// What OpenAI's call-control endpoints ask of a call.
package enum CallControl: Sendable {
    /// `/accept` with the session to run it with (a SIP call waiting for its webhook's answer).
    case accept(SessionUpdate?)
    /// GPT-Live's `/accept` (`POST /v1/live/sessions/{id}/accept`): a Live session for the call.
    case acceptLive(LiveSessionConfig)
    /// `/reject` with the SIP status to refuse it with (603 unless said).
    case reject(status: Int)
    /// `/refer`: transfer the call to `target` (a `tel:` or `sip:` URI) with a SIP REFER.
    case refer(target: String)
    case hangUp
}
