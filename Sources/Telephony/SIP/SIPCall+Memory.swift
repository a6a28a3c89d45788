import Loop
import Server

/// A SIP call's share of `parley_accounted_bytes` (`MemoryAccount`, under `sip`).
extension SIPCall {
    /// Reports what the call holds: itself, its dialog, its media, its keypad and sidebands, and
    /// what its session last said it holds; nothing once it has ended.
    func account() {
        guard dialog.state != .ended else { return memory.account.close() }
        memory.account.report(HeapSize.of(self) + dialog.heapBytes + media.heapBytes + keypad.heapBytes + waiting.heapBytes + memory.sessionBytes)
    }

    /// The call's session reports what it holds (`SessionSocket.account`).
    func account(sessionBytes bytes: Int) {
        memory.sessionBytes = bytes
        account()
    }
}
