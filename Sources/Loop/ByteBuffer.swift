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
    // 16 bytes, not 32: every connection has two and a WebSocket a third, idle or not, and an
    // idle connection is a few hundred bytes in all (docs/benchmarks.md, "Issue 26's targets").
    // The capacity is malloc's own figure, read when an append might not fit; a queue is bounded
    // far below 4 GiB (the message and outbound caps), so offsets fit in 32 bits.
    private var storage: UnsafeMutableRawPointer?
    private var head: UInt32 = 0
    private var tail: UInt32 = 0

    public init() {}

    deinit { free(storage) }

    public var count: Int { Int(tail &- head) }
    public var isEmpty: Bool { tail == head }
    public var allocatedBytes: Int { storage.map { malloc_usable_size($0) } ?? 0 }

    /// The bytes held, valid until the next mutation.
    public var readable: UnsafeMutableRawBufferPointer {
        guard let storage else { return UnsafeMutableRawBufferPointer(start: nil, count: 0) }
        return UnsafeMutableRawBufferPointer(start: storage + Int(head), count: count)
    }

    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        reserveTail(bytes.count)
        (storage! + Int(tail)).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
        tail += UInt32(bytes.count)
    }

    /// Drops `n` bytes from the front; releases the storage once nothing is left.
    public mutating func consume(_ n: Int) {
        precondition(n <= count)
        head += UInt32(n)
        if head == tail { release() }
    }

    public mutating func release() {
        free(storage)
        storage = nil
        head = 0
        tail = 0
    }

    /// Makes room for `n` more bytes at the tail, compacting before growing.
    private mutating func reserveTail(_ n: Int) {
        let capacity = allocatedBytes
        let tail = Int(self.tail)
        if capacity - tail >= n { return }
        if head > 0 {
            storage!.copyMemory(from: storage! + Int(head), byteCount: count)
            self.tail -= head
            head = 0
            if capacity - count >= n { return }
        }
        var newCapacity = max(capacity, 64)
        while newCapacity - count < n { newCapacity *= 2 }
        precondition(newCapacity <= Int(UInt32.max), "a ByteBuffer holds less than 4 GiB")
        guard let grown = realloc(storage, newCapacity) else { fatalError("out of memory") }
        storage = grown
    }
}
