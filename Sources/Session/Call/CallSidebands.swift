import Loop
import Server

/// The sideband WebSockets of a call (`/v1/realtime?call_id=…`, on whichever loop they landed),
/// by the handler's identity: each gets the session's events, and all close when the call ends.
/// One for every call that takes sidebands, SIP's and WebRTC's.
package struct CallSidebands {
    private var sidebands: [ObjectIdentifier: RelayedSocket] = [:]

    package init() {}

    package var isEmpty: Bool { sidebands.isEmpty }
    /// The table (its capacity's keys and values) and each sideband's relay.
    package var heapBytes: Int {
        (sidebands.capacity == 0 ? 0 : 32 + sidebands.capacity * MemoryLayout<(ObjectIdentifier, RelayedSocket)>.stride)
            + sidebands.values.reduce(0) { $0 + HeapSize.of($1) }
    }

    /// `sideband`, on `remote`'s loop, gets the events of a call on `home` from now on.
    package mutating func attach(_ sideband: Handoff<WebSocket>, on remote: LoopHandle, id: ObjectIdentifier, home: EventLoop) {
        sidebands[id] = RelayedSocket(home: home, remote: remote, socket: sideband)
    }

    package mutating func detach(_ id: ObjectIdentifier) { sidebands[id] = nil }

    /// `other`'s sidebands are these' too (a call's that waited for its conversation).
    package mutating func take(_ other: CallSidebands) {
        sidebands.merge(other.sidebands) { held, _ in held }
    }

    package func send(text: String) {
        for sideband in sidebands.values { sideband.send(text: text) }
    }

    /// `reason`: how the call ended (`CallLine.closeReason`), when its line is known.
    package mutating func closeAll(reason: String? = nil) {
        for sideband in sidebands.values { sideband.close(.ended, reason: reason ?? "the call ended") }
        sidebands = [:]
    }
}
