import Access
import Codec
import Loop
import Server
import Session
import SessionEngine

/// A placed call's screening: who answered it (the answering-machine gate, `AnsweredCallGate`, on
/// the caller's frames decoded once), what the session does about it, and the message it leaves
/// on a machine, ended by the reply's end and its last frame going out, not by a poll.
extension SIPCall {
    /// Who answered a placed call, and what its session does about it (no gate on calls Parley
    /// answered, and once it has nothing more to do); the gate hears the caller's decoded frames.
    /// While a message left on a machine is said, its longest wait (a deadline, not a poll: the
    /// reply's end and the media's last frame are what end it).
    struct Screening {
        var gate: AnsweredCallGate<[Int16]>?
        var messageLimit: ScheduledTask?

        mutating func end() {
            messageLimit?.cancel()
            messageLimit = nil
            gate = nil
        }
    }

    /// The placed call's session opens: a Realtime one with its settings on top of the server's
    /// call settings, or a GPT-Live one (the callee speaks first: the session answers its "hello"),
    /// the answering-machine detection deciding who answered and `answeringMachine` what then.
    /// `admitted`: the tenant's place, which the session holds.
    func answered(session: CallAPI, answeringMachine: AnsweringMachinePolicy, admitted: Admitted) {
        metrics.callsOpen.add(1)
        screening.gate = AnsweredCallGate(policy: answeringMachine)
        converse(session, admitted: admitted)
        carry([])
    }

    /// A frame of the caller's G.711, decoded once: to the answering-machine detector while it
    /// listens, and to the conversation.
    func heard(_ frame: [UInt8]) {
        guard dialog.state != .ended else { return }
        if memory.tick() { account() }
        let samples = G711.decode(frame, dialog.offer.codec == .pcmu ? .muLaw : .aLaw)
        guard screening.gate != nil else { return hear(samples) }
        for action in screening.gate!.heard(samples, samples: samples) {
            switch action {
            case .hear(let frames): for frame in frames { hear(frame) }
            case .decided(let verdict): decided(verdict)
            case .silence:
                conversation?.driver.stopAnswering()
                media.clearQueue()
            case .say(let message):
                sipLog("leaving a message", [:])
                conversation?.driver.say(message)
                // Two minutes at most; the reply's end and its last frame end it sooner.
                screening.messageLimit = agent.loop.schedule(after: 120) { [weak self] in self?.messageSaid() }
            case .hangUp:
                hangUp(.serverBye)
            }
        }
        if screening.gate?.phase == .conversing { screening.gate = nil }
    }

    func hear(_ samples: [Int16]) { conversation?.hear { $0.g711(decoded: samples) } }

    /// Who answered the call Parley placed: to the conversation (its event, the report), the log
    /// and /metrics.
    func decided(_ verdict: AnsweringMachineDetector.Verdict) {
        metrics.answeredBy.add(1, verdict.answer)
        sipLog("answered by", ["answer": verdict.answer.rawValue, "reason": verdict.reason, "after_ms": "\(verdict.afterMs)"])
        conversation?.answered(by: verdict)
    }

    /// The reply ended, or its last frame went out: a message left on a machine is said once both
    /// are so, and then the call ends.
    func replyEnded() { _ = agent.loop.schedule(after: 0) { [weak self] in self?.checkMessageSaid() } }
    func sentAll() { checkMessageSaid() }

    func checkMessageSaid() {
        guard screening.messageLimit != nil, conversation?.driver.isReplying != true, !media.isSending else { return }
        messageSaid()
    }

    func messageSaid() {
        guard let limit = screening.messageLimit, dialog.state != .ended else { return }
        limit.cancel()
        screening.messageLimit = nil
        sipLog("message left", [:])
        if let actions = screening.gate?.messageSaid() {
            for case .hangUp in actions { hangUp(.serverBye) }
        }
    }
}
