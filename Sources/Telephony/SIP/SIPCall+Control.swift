import Loop
import Server
import Session
import SIP
import SessionEngine

/// A SIP call's keys and call control (what reaches it on its line, `CallLine`).
extension SIPCall {
    /// A key (RFC 4733 or SIP INFO): to the conversation (its event), and the keypad's entry,
    /// once complete, a turn of the conversation, as on `/twilio`.
    func pressed(_ key: Character) {
        metrics.dtmf.add(1)
        guard let conversation else { return }
        conversation.keyPressed(key)
        if let entry = keypad.pressed(key, now: agent.loop.nanoseconds()) { conversation.userSaid(entry) }
        carry([])
    }

    /// Call control (on the call's line): the webhook's answer, a transfer, a hangup.
    func control(_ action: CallControl) {
        switch action {
        case .accept(let session): accept(.realtime(session))
        case .acceptLive(let config): accept(.live(config))
        case .reject(let status): reject(status: status)
        case .refer(let target): refer(to: target)
        case .hangUp: hangUp(.serverBye)
        }
    }

    /// A call's id as call control names it: `rtc_…` (OpenAI's `call_id`), or for a GPT-Live
    /// session's call `sess_…` (its `session_id`, which the session takes).
    static func newID(live: Bool) -> String { (live ? "sess_" : "rtc_") + SIPUserAgent.tag() + SIPUserAgent.tag() }

    /// Transfers the call with a REFER (RFC 3515): on its 2xx the caller's phone calls `target`,
    /// and this call ends (its BYE comes from the caller once the new call is up, or ours later).
    func refer(to target: String) { carry(dialog.refer(to: target)) }

    func send(_ request: SIPMessage) {
        agent.send(request: request, to: peer) { [weak self] response in
            guard let self, request.method == "REFER", let status = response?.status else { return }
            sipLog((200..<300).contains(status) ? "call transfer accepted" : "transfer refused", ["status": "\(status)"])
            dialog.referAnswered(status: status, now: agent.loop.nanoseconds())
            carry([])
        }
    }
}
