/// Memory that the processes of one box share (the workers of `parley serve --workers`): a file
/// mapped MAP_SHARED by each, behind one lock they all honour. The lock is a robust,
/// process-shared mutex, so a worker killed while holding it (SIGKILL, the OOM killer) passes it
/// to the next locker rather than stopping every other worker; what the region holds must
/// therefore be sound after any single store, which is what its users keep to.
public final class SharedRegion: @unchecked Sendable {
    /// The lock's room at the start of the file, rounded up so that what follows is aligned.
    private static let lockRoom = (Sys.sharedMutexBytes + 63) / 64 * 64
    private let memory: UnsafeMutableRawPointer
    private let mapped: Int
    /// Where the users' bytes begin, and how many there are.
    public let bytes: UnsafeMutableRawPointer
    public let count: Int

    /// Makes the file at `path` (which must not exist) holding `count` zero bytes and the lock.
    public static func create(_ path: String, count: Int) throws(SystemError) -> SharedRegion {
        let region = SharedRegion(memory: try Sys.mapSharedFile(path, bytes: lockRoom + count, create: true), count: count)
        try Sys.initSharedMutex(region.memory)
        return region
    }

    /// Maps the file another process made with `create` and the same `count`.
    public static func open(_ path: String, count: Int) throws(SystemError) -> SharedRegion {
        SharedRegion(memory: try Sys.mapSharedFile(path, bytes: lockRoom + count, create: false), count: count)
    }

    private init(memory: UnsafeMutableRawPointer, count: Int) {
        self.memory = memory
        mapped = Self.lockRoom + count
        bytes = memory + Self.lockRoom
        self.count = count
    }

    deinit { Sys.unmap(memory, bytes: mapped) }

    /// `body` with the lock held by this process.
    public func withLock<T>(_ body: (UnsafeMutableRawPointer) throws -> T) rethrows -> T {
        Sys.lockSharedMutex(memory)
        defer { Sys.unlockSharedMutex(memory) }
        return try body(bytes)
    }
}
