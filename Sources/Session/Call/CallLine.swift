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
package final class CallLine {
    package let id: String
    package let loop: EventLoop
    /// What answers call control: the dialer while a placed call rings, then the call.
    package weak var carrier: (any CallCarrier)?
    package private(set) var conversation: (any CallConversation)?
    /// Sidebands attached before the conversation began (while the webhook decides, a placed
    /// call rings, a browser's data channel opens).
    private var waiting = CallSidebands()
    package private(set) var hasEnded = false

    package init(id: String, on loop: EventLoop) {
        self.id = id
        self.loop = loop
    }

    /// What it holds: itself and the sidebands that wait (the conversation accounts its own).
    package var heapBytes: Int { HeapSize.of(self) + HeapSize.of(id) + waiting.heapBytes }

    /// Listed: sidebands and call control find it by its id from now on.
    package func list() { CallDirectory.shared.add(id, self, on: loop) }

    /// The call's conversation begins: the sidebands that waited are its own from now on.
    package func converse(_ made: any CallConversation) {
        made.adopt(waiting)
        waiting = CallSidebands()
        conversation = made
    }

    /// A progress event (text, in the API's dialect) to the sidebands that wait for the
    /// conversation: a placed call's `transport.ringing`, `answered`, `failed`.
    package func tellWaiting(_ text: String) { waiting.send(text: text) }

    /// The call is over: the sidebands that still wait close, and it is no longer listed. (The
    /// carrier closes the conversation, with the reason its carrier knows.)
    package func end() {
        guard !hasEnded else { return }
        hasEnded = true
        waiting.closeAll()
        conversation = nil
        CallDirectory.shared.remove(id, self)
    }

    // MARK: Reached from outside

    /// A sideband WebSocket (on `remote`'s loop) gets the call's events from now on.
    package func attach(sideband: Handoff<WebSocket>, on remote: LoopHandle, id: ObjectIdentifier) {
        guard !hasEnded else { return remote.execute { sideband.value.close(.normal, reason: "the call ended") } }
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
