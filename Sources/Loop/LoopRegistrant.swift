/// What the loop calls on an object it watches: a socket (a client connection, a listener, an
/// upstream connection) registered with `EventLoop.register`. Every call comes on the loop's thread.
///
/// A class to subclass rather than a protocol: the slab then holds one 8-byte reference per slot,
/// where an existential would take 16, and a million idle sessions are a million slots
/// (docs/benchmarks.md, "Architecture: before and after").
open class LoopRegistrant {
    /// In the loop's read-again list (`EventLoop.readAgain`); the loop's own bookkeeping, kept here
    /// because the object has room for it and the slab would otherwise need another array.
    final var queuedToReadAgain = false

    public init() {}

    /// The descriptor has bytes to read, or its peer hung up (`hungUp`: its FIN or an error came
    /// with this edge, so read on to the end of file even after a short read).
    open func readable(hungUp: Bool) {}
    /// The descriptor can take bytes again (or, for a non-blocking connect, has connected or failed).
    open func writable() {}
    /// The registration's deadline (`EventLoop.setDeadline`) has passed.
    open func deadlinePassed() {}
    /// The loop has stopped with this registration still open: release everything now.
    open func loopStopped() {}
}

/// A registration's place in its loop: a slot in the loop's slab and that slot's generation, so
/// that an event or a queued read for a registration that ended, and whose slot was reused, is
/// recognised and dropped (the nginx "instance" bit, SwiftNIO's generation).
public struct Registration: Equatable, Sendable {
    public let slot: Int32
    public let generation: UInt32
    /// The 64-bit user data epoll hands back.
    var token: UInt64 { UInt64(generation) << 32 | UInt64(UInt32(bitPattern: slot)) }
}
