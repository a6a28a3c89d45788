import Glibc
import Testing
@testable import Codec

@Suite struct FileBytesTests {
    static func path(_ name: String) -> String { "/tmp/parley-filebytes-\(getpid())-\(name)" }

    @Test func writtenBytesReadBack() throws {
        let path = Self.path("round-trip")
        defer { unlink(path) }
        let bytes = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        try FileBytes.write(bytes, path: path)
        #expect(try FileBytes.read(path: path) == bytes)
        try FileBytes.write([], path: path)
        #expect(try FileBytes.read(path: path) == [])
    }

    @Test func fileOverTheLimitIsRefused() throws {
        let path = Self.path("limit")
        defer { unlink(path) }
        try FileBytes.write([UInt8](repeating: 1, count: 1001), path: path)
        #expect(throws: AudioFileError.fileTooLarge(path: path, limit: 1000)) { try FileBytes.read(path: path, limit: 1000) }
        #expect(try FileBytes.read(path: path, limit: 1001).count == 1001)
    }

    /// Devices report no size: the limit is enforced on what is read, not on what fstat says.
    @Test func endlessDeviceStopsAtTheLimit() {
        #expect(throws: AudioFileError.fileTooLarge(path: "/dev/zero", limit: 100_000)) {
            try FileBytes.read(path: "/dev/zero", limit: 100_000)
        }
    }

    @Test func failuresCarryTheirErrno() {
        #expect(throws: AudioFileError.cannotOpen(path: "/nonexistent/x", errno: ENOENT)) { try FileBytes.read(path: "/nonexistent/x") }
        #expect(throws: AudioFileError.cannotRead(path: "/tmp", errno: EISDIR)) { try FileBytes.read(path: "/tmp") }
        #expect(throws: AudioFileError.cannotWrite(path: "/nonexistent/x", errno: ENOENT)) { try FileBytes.write([1], path: "/nonexistent/x") }
    }
}
