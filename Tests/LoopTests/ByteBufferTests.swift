import Testing
@testable import Loop

@Suite struct ByteBufferTests {
    @Test func holdsNoStorageWhenEmpty() {
        var buffer = ByteBuffer()
        #expect(buffer.allocatedBytes == 0)
        ([1, 2, 3] as [UInt8]).withUnsafeBytes { buffer.append($0) }
        #expect(buffer.count == 3 && buffer.allocatedBytes > 0)
        buffer.consume(3)
        #expect(buffer.isEmpty && buffer.allocatedBytes == 0)
    }

    @Test func keepsOrderAcrossGrowthAndPartialConsumption() {
        var buffer = ByteBuffer()
        var expected: [UInt8] = []
        for round in 0..<50 {
            let chunk = (0..<(round * 37 % 300)).map { UInt8(truncatingIfNeeded: $0 &+ round) }
            chunk.withUnsafeBytes { buffer.append($0) }
            expected += chunk
            let take = min(buffer.count, round * 11)
            buffer.consume(take)
            expected.removeFirst(take)
            #expect(Array(buffer.readable) == expected)
        }
    }
}
