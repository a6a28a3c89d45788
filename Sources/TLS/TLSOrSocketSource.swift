import Loop

/// A connection's socket as `EventLoop.readUntilDrained` reads it: through its TLS session when it
/// has one, else directly. One source for both, so that a connection that may serve either runs one
/// specialised drain, not two.
public struct TLSOrSocketSource: ReadSource {
    public let fd: Int32
    public let tls: TLSStream?
    /// Set when a TLS read must wait for the socket to be writable (a TLS 1.3 key update to
    /// answer): the owner waits for that edge and reads again then.
    public var needsWritable = false

    @inlinable
    public init(fd: Int32, tls: TLSStream?) {
        self.fd = fd
        self.tls = tls
    }

    /// A TLS read in the socket's own terms: `wantRead` is "would block", `wantWrite` too (with
    /// `needsWritable` set); the peer's close and a failed session both end the stream.
    @inlinable
    public mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> Sys.IOResult {
        guard let tls else { return try Sys.receive(fd, into: buffer) }
        switch tls.read(into: buffer) {
        case .transferred(let n): return .transferred(n)
        case .wantRead: return .wouldBlock
        case .wantWrite:
            needsWritable = true
            return .wouldBlock
        case .closed, .failed: return .endOfFile
        }
    }

    @inlinable public var shortReadDrains: Bool { tls == nil }
}
