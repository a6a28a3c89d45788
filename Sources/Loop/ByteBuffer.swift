import CLinux
#if canImport(Glibc)
import Glibc
#endif

/// A growable byte queue that owns its storage and frees it the moment it is empty, so a connection
/// holds heap only while it has bytes pending. Noncopyable: exactly one owner, no hidden copies.
///
/// `allocatedBytes` is what malloc really handed out (`malloc_usable_size`), which is what the
/// connection's memory account reports.
public struct ByteBuffer: ~Copyable {
    private var storage: UnsafeMutableRawPointer?
    private var capacity = 0
    private var head = 0
    private var tail = 0

    public init() {}

    deinit { free(storage) }

    public var count: Int { tail - head }
    public var isEmpty: Bool { tail == head }
    public var allocatedBytes: Int { storage.map { malloc_usable_size($0) } ?? 0 }

    /// The bytes held, valid until the next mutation.
    public var readable: UnsafeMutableRawBufferPointer {
        guard let storage else { return UnsafeMutableRawBufferPointer(start: nil, count: 0) }
        return UnsafeMutableRawBufferPointer(start: storage + head, count: count)
    }

    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        reserveTail(bytes.count)
        (storage! + tail).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
        tail += bytes.count
    }

    /// Drops `n` bytes from the front; releases the storage once nothing is left.
    public mutating func consume(_ n: Int) {
        precondition(n <= count)
        head += n
        if head == tail { release() }
    }

    public mutating func release() {
        free(storage)
        storage = nil
        capacity = 0
        head = 0
        tail = 0
    }

    /// Makes room for `n` more bytes at the tail, compacting before growing.
    private mutating func reserveTail(_ n: Int) {
        if capacity - tail >= n { return }
        if head > 0 && capacity - count >= n {
            storage!.copyMemory(from: storage! + head, byteCount: count)
            tail -= head
            head = 0
            return
        }
        if head > 0 {
            storage!.copyMemory(from: storage! + head, byteCount: count)
            tail -= head
            head = 0
        }
        var newCapacity = max(capacity, 64)
        while newCapacity - tail < n { newCapacity *= 2 }
        guard let grown = realloc(storage, newCapacity) else { fatalError("out of memory") }
        storage = grown
        capacity = newCapacity
    }
}
