import Loop
import Synchronization

/// The process's calls (WebRTC's, SIP's, Twilio's, GPT-Live's sessions) by id, for what reaches a
/// call from outside its own transport: the sideband WebSocket (`/v1/realtime?call_id=…`) and call
/// control, which may arrive on any loop.
package final class CallDirectory: Sendable {
    package static let shared = CallDirectory()

    /// A call's line and the loop it lives on (every use of the line is on that loop).
    package struct Entry: Sendable {
        let home: LoopHandle
        let line: Handoff<CallLine>
    }

    private let calls = Mutex<[String: Entry]>([:])

    package func add(_ id: String, _ line: CallLine, on loop: EventLoop) {
        calls.withLock { $0[id] = Entry(home: loop.handle, line: Handoff(line)) }
    }

    /// Forgets `line`, if it is the one listed under `id`.
    package func remove(_ id: String, _ line: CallLine) {
        calls.withLock { calls in
            if calls[id]?.line.value === line { calls[id] = nil }
        }
    }

    package func find(_ id: String) -> Entry? { calls.withLock { $0[id] } }

    /// Runs `body` with the call's line on its loop; false when there is no such call.
    package func withCall(_ id: String, _ body: @escaping @Sendable (CallLine) -> Void) -> Bool {
        guard let entry = find(id) else { return false }
        entry.home.execute { body(entry.line.value) }
        return true
    }
}
