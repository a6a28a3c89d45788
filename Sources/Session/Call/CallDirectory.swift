import Loop
import Synchronization

/// The process's calls (WebRTC's and SIP's) by id, for what reaches a call from outside its own
/// transport: the sideband WebSocket (`/v1/realtime?call_id=…`) and call control, which may
/// arrive on any loop.
package final class CallDirectory: Sendable {
    package static let shared = CallDirectory()

    /// A call's session and the loop it lives on (every use of the session is on that loop).
    package struct Entry: Sendable {
        let home: LoopHandle
        let call: Handoff<any DirectedCall>
    }

    private let calls = Mutex<[String: Entry]>([:])

    package func add(_ id: String, _ call: any DirectedCall, on loop: EventLoop) {
        calls.withLock { $0[id] = Entry(home: loop.handle, call: Handoff(call)) }
    }

    package func remove(_ id: String) {
        _ = calls.withLock { $0.removeValue(forKey: id) }
    }

    package func find(_ id: String) -> Entry? { calls.withLock { $0[id] } }

    /// Runs `body` with the call on its loop; false when there is no such call.
    package func withCall(_ id: String, _ body: @escaping @Sendable (any DirectedCall) -> Void) -> Bool {
        guard let entry = find(id) else { return false }
        entry.home.execute { body(entry.call.value) }
        return true
    }
}
