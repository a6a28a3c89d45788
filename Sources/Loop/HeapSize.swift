import CLinux
#if canImport(Glibc)
import Glibc
#endif

/// How memory accounts (`MemoryAccount`) estimate what a holder keeps on the heap, one rule each,
/// so that every account counts the same way.
public enum HeapSize {
    /// An object's own allocation as malloc gave it (not what it points to).
    @inline(__always) public static func of(_ object: AnyObject) -> Int {
        malloc_usable_size(Unmanaged.passUnretained(object).toOpaque())
    }

    /// A string's storage: none for up to 15 UTF-8 bytes (stored inline), else its bytes and the
    /// 32-byte header of a native Swift string's buffer.
    @inline(__always) public static func of(_ string: String) -> Int {
        let count = string.utf8.count
        return count <= 15 ? 0 : 32 + count
    }

    /// An array's buffer: its capacity and the 32-byte header; none while it is empty and unallocated.
    @inline(__always) public static func of<Element>(_ array: [Element]) -> Int {
        array.capacity == 0 ? 0 : 32 + array.capacity * MemoryLayout<Element>.stride
    }
}
