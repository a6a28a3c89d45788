import TestSupport

/// How a stream target's input arrives: as the reads a socket would give. The input's first byte
/// chooses the split, so libFuzzer steers it like any other byte and a crash replays exactly: 0
/// gives the rest in one read; any other value `b` gives reads of 1 to 2^(b & 7) bytes, their sizes
/// drawn from a generator seeded with `b`. The rest of the input is the stream.
struct Reads {
    /// The stream: the input without its first byte.
    let stream: UnsafeRawBufferPointer
    /// The stream cut into reads, in order.
    let reads: [UnsafeRawBufferPointer]

    init(_ input: UnsafeRawBufferPointer) {
        guard let choice = input.first else {
            (stream, reads) = (input, [])
            return
        }
        let stream = UnsafeRawBufferPointer(rebasing: input[1...])
        self.stream = stream
        guard choice != 0 else {
            reads = stream.isEmpty ? [] : [stream]
            return
        }
        var random = SeededRandom(seed: UInt64(choice))
        let longest = 1 << (choice & 7)
        var reads: [UnsafeRawBufferPointer] = []
        var start = 0
        while start < stream.count {
            let end = min(stream.count, start + Int.random(in: 1...longest, using: &random))
            reads.append(UnsafeRawBufferPointer(rebasing: stream[start..<end]))
            start = end
        }
        self.reads = reads
    }
}
