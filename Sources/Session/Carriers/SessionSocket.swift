import Loop
import Server

/// What a session writes to and is scheduled on: its WebSocket; while parked (the client gone
/// within the grace window), nothing, so that replies go on into the replay log; after a resume
/// that arrived on another loop, that loop's WebSocket, reached through its inbox. The session's
/// own work (model calls, speech, timers) always stays on `loop`, the loop it began on.
///
/// A call's carrier is one too (its data channel's text, or nothing, its BYE or hangup as its
/// close); its audio is its media leg's (`MediaLeg`), not the socket's.
package protocol SessionSocket {
    func send(text: String)
    /// Ends the session's carriage as the carrier says `ending` (a close code, a BYE, a hang-up).
    func close(_ ending: SessionEnding, reason: String)
    var isOpen: Bool { get }
    /// False while parked: what is sent then only goes to the replay log.
    var hasClient: Bool { get }
    /// The session's home loop.
    var loop: EventLoop { get }
    /// What the session holds (`handlerBytes`), for the socket to account with its own bytes
    /// under its carrier; 0 once the session has left the socket (parked, resumed elsewhere).
    func account(handlerBytes: Int)
}

/// A session socket of a WebSocket's, directly, parked or relayed: it carries binary frames too,
/// a WebSocket session's Opus (`RealtimeSessionHandler`, the replay log's frames).
package protocol FrameSocket: SessionSocket {
    func send(binary: [UInt8])
}

extension WebSocket: FrameSocket {
    package var hasClient: Bool { true }

    package func close(_ ending: SessionEnding, reason: String) {
        close(WebSocketCloseCode(ending), reason: reason)
    }
}

/// A session with no client: what it sends is kept only in its replay log. Closing it (a limit
/// passed while parked) ends the session through `onClose`.
///
/// What the session holds while parked (its engine, its replay log) is accounted here, under
/// `parked`, since no connection holds it: the client's went with the client.
final class ParkedSocket: FrameSocket {
    let loop: EventLoop
    var onClose: ((SessionEnding) -> Void)?
    private var memory: MemoryAccount
    private var closed = false
    init(loop: EventLoop) {
        self.loop = loop
        memory = MemoryAccount(.parked, on: loop)
    }
    func send(text: String) {}
    func send(binary: [UInt8]) {}
    func close(_ ending: SessionEnding, reason: String) {
        closed = true
        memory.close()
        let onClose = onClose
        self.onClose = nil
        onClose?(ending)
    }
    var isOpen: Bool { true }
    var hasClient: Bool { false }
    func account(handlerBytes: Int) { memory.report(closed || handlerBytes == 0 ? 0 : HeapSize.of(self) + handlerBytes) }
}

/// A client's WebSocket on another loop than the session's: each write is handed to that loop,
/// in order (its inbox is first in, first out). Only resumed sessions pay the hop.
///
/// The session's state stays on its home loop, so it is accounted there, under `relayed`; the
/// client's connection on the other loop accounts only its own transport.
package final class RelayedSocket: FrameSocket {
    package let loop: EventLoop
    private let remote: LoopHandle
    private let socket: Handoff<WebSocket>
    private var closed = false
    private var memory: MemoryAccount

    package init(home: EventLoop, remote: LoopHandle, socket: Handoff<WebSocket>) {
        loop = home
        self.remote = remote
        self.socket = socket
        memory = MemoryAccount(.relayed, on: home)
    }

    package func send(text: String) {
        let socket = socket
        if !closed { remote.execute { socket.value.send(text: text) } }
    }

    package func send(binary: [UInt8]) {
        let socket = socket
        if !closed { remote.execute { socket.value.send(binary: binary) } }
    }

    package func close(_ ending: SessionEnding, reason: String) {
        guard !closed else { return }
        closed = true
        memory.close()
        let socket = socket
        remote.execute { socket.value.close(ending, reason: reason) }
    }

    package var isOpen: Bool { !closed }
    package var hasClient: Bool { true }
    package func account(handlerBytes: Int) {
        memory.report(closed || handlerBytes == 0 ? 0 : HeapSize.of(self) + HeapSize.of(socket) + handlerBytes)
    }
}

/// An object handed between loops whose every use stays on one loop at a time: the session to
/// its home loop, a WebSocket to the loop that owns it. The compiler cannot see that discipline,
/// hence the unchecked conformance; each `execute` that carries one is the whole of the handoff.
package final class Handoff<Value>: @unchecked Sendable {
    package let value: Value
    package init(_ value: Value) { self.value = value }
}
