import Loop
import Server

/// A SIP call's share of `parley_accounted_bytes` (`CallAccount`, under `sip`).
extension SIPCall {
    /// Counts what the call holds anew: itself, its dialog, its media, its keypad and sidebands;
    /// nothing once it has ended. After each of the dialog's steps, and once a second of media.
    func account() {
        guard dialog.state != .ended else { return memory.close() }
        memory.own(HeapSize.of(self) + dialog.heapBytes + media.heapBytes + keypad.heapBytes + line.heapBytes)
    }

    /// The call's session reports what it holds (`SessionSocket.account`).
    func account(sessionBytes bytes: Int) { memory.session(bytes) }
}
