import Loop
#if canImport(Glibc)
import Glibc
#endif

/// What moves a server's time for a test (`ClockedConversation`): the `ManualClock` of a loop in
/// this process, or a `parley serve --test-clock` child's (`ServerClock`).
public protocol TestClock: AnyObject {
    /// Moves time on and returns once the server is settled there; false if it never settled.
    func advance(milliseconds: Int) -> Bool
}

extension ManualClock: TestClock {}

/// A `parley serve --test-clock PATH` child's clock, moved through its socket (`TestClockControl`).
public final class ServerClock: TestClock {
    private let fd: Int32

    public struct Unreachable: Error, CustomStringConvertible {
        public let description: String
    }

    /// Connects to the child's socket, waiting up to five seconds for it to appear.
    public init(path: String) throws {
        guard let address = SocketAddress.unix(path: path) else { throw Unreachable(description: "\(path) cannot be a socket's path") }
        for _ in 0..<500 where access(path, F_OK) != 0 { usleep(10_000) }
        fd = try Sys.streamSocket(family: AF_UNIX, .blocking)
        do {
            _ = try Sys.connect(fd, to: address)
        } catch {
            Sys.close(fd)
            throw Unreachable(description: "the server's clock at \(path): \(error)")
        }
    }

    deinit { Sys.close(fd) }

    public func advance(milliseconds: Int) -> Bool {
        guard (try? Sys.writeWhole(fd, Array("advance \(milliseconds)\n".utf8))) != nil else { return false }
        var reply: [UInt8] = []
        var byte: UInt8 = 0
        while reply.count < 256 {
            let n = withUnsafeMutableBytes(of: &byte) { (try? Sys.read(fd, into: $0)) ?? .endOfFile }
            guard case .transferred(1) = n else { return false }
            if byte == UInt8(ascii: "\n") { break }
            reply.append(byte)
        }
        return reply == Array("ok".utf8)
    }
}
