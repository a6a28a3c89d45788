import TLS

/// Reading and writing one client connection's bytes: straight through the socket for ws://, through
/// its TLS session for wss://. Both answer in `ClientSocket.IOResult`'s terms, so the pool and the
/// metrics fetch do not care which.
enum ClientTransport {
    static func read(_ fd: Int32, _ tls: TLSStream?, into buffer: UnsafeMutableRawBufferPointer) -> ClientSocket.IOResult {
        guard let tls else { return ClientSocket.read(fd, into: buffer) }
        return result(of: tls.read(into: buffer))
    }

    static func write(_ fd: Int32, _ tls: TLSStream?, _ bytes: UnsafeRawBufferPointer) -> ClientSocket.IOResult {
        guard let tls else { return ClientSocket.write(fd, bytes) }
        return result(of: tls.write(bytes))
    }

    private static func result(of outcome: TLSStream.Outcome) -> ClientSocket.IOResult {
        switch outcome {
        case .transferred(let n): return .transferred(n)
        // Level-triggered polling asks again; a TLS 1.3 key update that needs a write is answered
        // by the next write, which these clients always have queued or coming.
        case .wantRead, .wantWrite: return .wouldBlock
        case .closed: return .endOfFile
        case .failed(let error): return .tlsFailed(error.description)
        }
    }
}
