/// What the loop calls on an object it watches: a socket (a client connection, a listener, an
/// upstream connection) registered with `EventLoop.register`. Every call comes on the loop's thread.
public protocol LoopRegistrant: AnyObject {
    /// The descriptor has bytes to read, or its peer hung up (`hungUp`: its FIN or an error came
    /// with this edge, so read on to the end of file even after a short read).
    func readable(hungUp: Bool)
    /// The descriptor can take bytes again (or, for a non-blocking connect, has connected or failed).
    func writable()
    /// The registration's deadline (`EventLoop.setDeadline`) has passed.
    func deadlinePassed()
    /// The loop has stopped with this registration still open: release everything now.
    func loopStopped()
}

extension LoopRegistrant {
    public func writable() {}
    public func deadlinePassed() {}
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
