import Glibc

/// Whole-file reads and writes with plain open/read/write/close. The audio parsers work on a file
/// held in memory, so reads are bounded: a wrong path (a disk image, /dev/zero) fails with a typed
/// error instead of exhausting memory.
enum FileBytes {
    /// 256 MiB: about 46 minutes of 48 kHz stereo PCM16, far more than any clip Parley reads.
    static let defaultLimit = 256 << 20

    private static let chunkSize = 64 << 10

    /// The whole file, or `fileTooLarge` as soon as more than `limit` bytes have been seen. The
    /// size from fstat only presizes the buffer: pipes report 0 and files can grow while read.
    static func read(path: String, limit: Int = defaultLimit) throws(AudioFileError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .cannotOpen(path: path, errno: errno) }
        defer { close(fd) }
        var info = stat()
        let expected = fstat(fd, &info) == 0 ? Int(info.st_size) : 0
        guard expected <= limit else { throw .fileTooLarge(path: path, limit: limit) }
        var bytes = [UInt8]()
        bytes.reserveCapacity(expected)
        var chunk = [UInt8](repeating: 0, count: chunkSize)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n == 0 { return bytes }
            if n < 0 {
                if errno == EINTR { continue }
                throw .cannotRead(path: path, errno: errno)
            }
            guard bytes.count + n <= limit else { throw .fileTooLarge(path: path, limit: limit) }
            bytes += chunk[0..<n]
        }
    }

    /// Creates or truncates `path` (mode 0644) and writes all of `bytes`.
    static func write(_ bytes: [UInt8], path: String) throws(AudioFileError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .cannotWrite(path: path, errno: errno) }
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                let failure = errno
                close(fd)
                throw .cannotWrite(path: path, errno: failure)
            }
            offset += n
        }
        // close can be where a deferred write error (quota, NFS) is first reported.
        guard close(fd) == 0 else { throw .cannotWrite(path: path, errno: errno) }
    }
}
