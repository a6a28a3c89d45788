import JSON
import Models
import Speech
import Testing
import TestSupport
import Loop
#if canImport(Glibc)
import Glibc
import SpeechContracts
#endif

/// The helper's protocol with bad input: a malformed frame closes that connection only; the
/// helper goes on answering others.
@Suite(.serialized) struct SpeechHelperProtocolTests {
    /// A blocking connection to the helper's socket, with a 10 s receive time-out.
    func connect(_ path: String) throws -> Int32 {
        let fd = try Sys.streamSocket(family: AF_UNIX, .blocking)
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        _ = try Sys.connect(fd, to: try #require(SocketAddress.unix(path: path)))
        return fd
    }

    func readFrames(_ fd: Int32, count: Int) throws -> [SpeechHelperFrame] {
        var reader = SpeechHelperFrame.Reader()
        var frames: [SpeechHelperFrame] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while frames.count < count {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { break }
            frames += try buffer[..<n].withUnsafeBytes { try reader.read($0) }
        }
        return frames
    }

    /// The helper closed: end of file, or a reset when it closed with our bytes unread.
    func closedByHelper(_ fd: Int32) -> Bool {
        var byte: UInt8 = 0
        let n = recv(fd, &byte, 1, 0)
        return n == 0 || (n < 0 && errno == ECONNRESET)
    }

    @Test func aMalformedFrameClosesItsConnectionAndTheHelperGoesOn() throws {
        let helper = try #require(HelperSpeechTests.helper, "the speech helper did not start")
        let path = helper.status.socketPath
        for garbage: [UInt8] in [[0xFF, 0xFF, 0xFF, 0x7F, 0, 0, 0, 0], SpeechHelperFrame(header: .array([])).encoded(), Array("{not json".utf8) + [0, 0, 0, 0]] {
            let bad = try connect(path)
            _ = garbage.withUnsafeBytes { send(bad, $0.baseAddress, $0.count, 0) }
            // "{not…" is no length prefix at all: read as one, it is a header past the limit.
            #expect(closedByHelper(bad), "the helper kept a connection that sent \(garbage.prefix(12))")
            Sys.close(bad)
        }
        let good = try connect(path)
        defer { Sys.close(good) }
        let hello = SpeechHelperFrame(.hello, id: 7, [("version", .int(SpeechHelperContract.version))]).encoded()
        let unknown = SpeechHelperFrame(header: .object([("op", .string("dance")), ("id", .int(8))])).encoded()
        _ = (hello + unknown).withUnsafeBytes { send(good, $0.baseAddress, $0.count, 0) }
        let answers = try readFrames(good, count: 2)
        #expect(answers.first { $0.header["id"]?.int == 7 }?.header["models"]?["transcribe"]?.string == "whisper-tiny.en")
        #expect(answers.first { $0.header["id"]?.int == 8 }?.header["error"]?.string == SpeechHelperContract.ErrorCode.unknownOperation.rawValue, "\(answers)")
    }

    @Test func badRequestsAreAnsweredWithTheirErrorCodesNotACrash() throws {
        let helper = try #require(HelperSpeechTests.helper, "the speech helper did not start")
        let fd = try connect(helper.status.socketPath)
        defer { Sys.close(fd) }
        let request = SpeechHelperFrame(.hello, id: 0, [("version", .int(SpeechHelperContract.version))]).encoded()
            + SpeechHelperFrame(.speak, id: 1, [("text", .int(5))]).encoded()
            + SpeechHelperFrame(.open, id: 2, [("rate", .int(11025))]).encoded()
            + SpeechHelperFrame(.partial, id: 3, [("stream", .int(99))]).encoded()
        _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        let answers = try readFrames(fd, count: 4).filter { $0.header["op"] == nil }
        let codes = Dictionary(uniqueKeysWithValues: answers.compactMap { a in a.header["id"]?.int.map { ($0, a.header["error"]?.string ?? "none") } })
        #expect(codes == [1: "bad_request", 2: "bad_request", 3: "unknown_stream"], "\(answers)")
    }
}
