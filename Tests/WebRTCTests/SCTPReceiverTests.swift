import Testing
@testable import WebRTC

struct SCTPReceiverTests {
    private func chunk(_ tsn: UInt32, ssn: UInt16, _ bytes: [UInt8], b: Bool = true, e: Bool = true, unordered: Bool = false) -> SCTPDataChunk {
        SCTPDataChunk(tsn: tsn, stream: 0, ssn: ssn, ppid: 53, unordered: unordered, beginning: b, ending: e, userData: bytes)
    }

    @Test func fragmentsArrivingBackwardsAreReassembledOnce() {
        var receiver = SCTPReceiver(peerInitialTSN: 10, capacity: 1 << 20, maxMessageBytes: 1000)
        var out: [SCTPReceiver.Message] = []
        #expect(receiver.receive(chunk(12, ssn: 0, [3], b: false, e: true), into: &out) == .accepted)
        #expect(receiver.receive(chunk(11, ssn: 0, [2], b: false, e: false), into: &out) == .accepted)
        #expect(out.isEmpty)
        #expect(receiver.sack().gapBlocks == [.init(start: 2, end: 3)])
        #expect(receiver.receive(chunk(10, ssn: 0, [1], b: true, e: false), into: &out) == .accepted)
        #expect(out.map(\.bytes) == [[1, 2, 3]])
        #expect(receiver.receive(chunk(11, ssn: 0, [2], b: false, e: false), into: &out) == .duplicate)
        #expect(receiver.bufferedBytes == 0)
        #expect(receiver.window == 1 << 20)
    }

    @Test func anOrderedMessageWaitsForTheOneBeforeItButAnUnorderedOneDoesNot() {
        var receiver = SCTPReceiver(peerInitialTSN: 1, capacity: 1 << 20, maxMessageBytes: 1000)
        var out: [SCTPReceiver.Message] = []
        _ = receiver.receive(chunk(2, ssn: 1, [2]), into: &out)
        _ = receiver.receive(chunk(3, ssn: 0, [9], unordered: true), into: &out)
        #expect(out.map(\.bytes) == [[9]])
        _ = receiver.receive(chunk(1, ssn: 0, [1]), into: &out)
        #expect(out.map(\.bytes) == [[9], [1], [2]])
    }

    /// RFC 3758 section 3.6: the skipped message's successors are delivered.
    @Test func aForwardTSNSkipsAnAbandonedMessage() {
        var receiver = SCTPReceiver(peerInitialTSN: 1, capacity: 1 << 20, maxMessageBytes: 1000)
        var out: [SCTPReceiver.Message] = []
        _ = receiver.receive(chunk(2, ssn: 0, [0xAA], b: false, e: true), into: &out)
        _ = receiver.receive(chunk(3, ssn: 1, [2]), into: &out)
        receiver.forward(SCTPForwardTSNChunk(newCumulativeTSN: 2, skipped: [.init(stream: 0, ssn: 0)]), into: &out)
        #expect(out.map(\.bytes) == [[2]])
        #expect(receiver.cumulativeTSN == 3)
        #expect(receiver.bufferedBytes == 0)
    }

    @Test func aMessageOverTheBoundIsCaughtBeforeItIsWhole() {
        var receiver = SCTPReceiver(peerInitialTSN: 1, capacity: 1 << 20, maxMessageBytes: 1000)
        var out: [SCTPReceiver.Message] = []
        #expect(receiver.receive(chunk(1, ssn: 0, Array(repeating: 1, count: 600), b: true, e: false), into: &out) == .accepted)
        #expect(receiver.receive(chunk(2, ssn: 0, Array(repeating: 1, count: 600), b: false, e: false), into: &out) == .messageTooLarge)
    }
}
