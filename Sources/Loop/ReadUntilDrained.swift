/// The read-until-EAGAIN loop of an edge-triggered socket, written once for every socket on a loop
/// (a client's connection, an upstream's, the speech helper's): read into the loop's one shared
/// buffer, hand each chunk to the owner, and say why reading ended.
///
/// It is a generic, inlinable method with non-escaping closures so that each caller gets its own
/// specialised copy: no closure context and no existential box on the heap per read, as the
/// hand-written loops it replaces had none.

/// Where a drain reads from: a socket (`SocketSource`), or a TLS session over one (TLS's
/// `TLSOrSocketSource`).
public protocol ReadSource {
    /// One non-blocking read into `buffer`.
    mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> Sys.IOResult
    /// True when a read shorter than the buffer proves the socket drained, as it does for a plain
    /// edge-triggered socket (new data brings a new edge), so the EAGAIN read is saved. False for
    /// TLS, which returns one record at a time and may hold more already read: only `wouldBlock`
    /// proves that source drained.
    var shortReadDrains: Bool { get }
}

/// A socket read with recv(2).
public struct SocketSource: ReadSource {
    public let fd: Int32

    @inlinable public init(fd: Int32) { self.fd = fd }

    @inlinable
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> Sys.IOResult {
        try Sys.receive(fd, into: buffer)
    }

    @inlinable public var shortReadDrains: Bool { true }
}

/// What the owner of a chunk wants next.
public enum ReadStep: Sendable {
    case readOn
    /// Reading must stop: the owner closed, paused, or cannot take more now.
    case stop
}

/// Why a drain ended.
public enum ReadOutcome: Equatable, Sendable {
    /// Nothing more to read until the next edge: EAGAIN, or a short read from a source where that
    /// proves it.
    case drained
    /// The owner answered `.stop`.
    case stopped
    /// The budget of reads is spent and the socket may hold more: the owner asks the loop to read
    /// again (`readAgain`) so that one busy socket cannot hold the loop.
    case budgetSpent
    /// The peer closed (a FIN; for TLS, its close_notify or a failed session).
    case endOfFile
    case failed(SystemError)
}

extension EventLoop {
    /// Reads `source` into the loop's read buffer until it is drained, the owner stops, or
    /// `budget` reads are done.
    ///
    /// - `hungUp`: the peer's FIN came with this edge; read on past a short read to the end of
    ///   file, since no further edge will announce it.
    /// - `held`: called before each read with the whole buffer; the owner copies to its front any
    ///   bytes it still holds from earlier reads (an incomplete frame) and returns their count,
    ///   less than the buffer's size. The read lands after them, and `received` sees the held bytes
    ///   and the new ones as one chunk, so a parser never sees a frame split. None by default.
    /// - `received`: each chunk, valid only during the call (the buffer is the loop's).
    @inlinable
    public func readUntilDrained<Source: ReadSource>(
        from source: inout Source, budget: Int = .max, hungUp: Bool = false,
        held: (UnsafeMutableRawBufferPointer) -> Int = { _ in 0 },
        _ received: (UnsafeMutableRawBufferPointer) -> ReadStep
    ) -> ReadOutcome {
        var reads = budget
        while reads > 0 {
            reads -= 1
            let prefix = held(readBuffer)
            let space = UnsafeMutableRawBufferPointer(rebasing: readBuffer[prefix...])
            let result: Sys.IOResult
            do { result = try source.read(into: space) } catch { return .failed(error) }
            switch result {
            case .wouldBlock: return .drained
            case .endOfFile: return .endOfFile
            case .transferred(let n):
                if received(UnsafeMutableRawBufferPointer(rebasing: readBuffer[0..<(prefix + n)])) == .stop { return .stopped }
                if n < space.count && !hungUp && source.shortReadDrains { return .drained }
            }
        }
        return .budgetSpent
    }
}
