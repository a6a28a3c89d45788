import JSON
import Speech
import Testing

/// The speech helper's framing, without a socket: frames split anywhere, and bad frames refused.
@Suite struct SpeechHelperFrameTests {
    @Test func framesSplitAnywhereComeOutWhole() throws {
        let one = SpeechHelperFrame(header: .object([("id", .int(1)), ("complete", .bool(true))]), payload: [1, 2, 3])
        let two = SpeechHelperFrame.encoded(header: .object([("op", .string("turn")), ("id", .int(2))]), samples: [-1, 256][...])
        let bytes = one.encoded() + two
        for cut in 0...bytes.count {
            var reader = SpeechHelperFrame.Reader()
            var frames = try bytes[..<cut].withUnsafeBytes { try reader.read($0) }
            frames += try bytes[cut...].withUnsafeBytes { try reader.read($0) }
            #expect(frames.count == 2)
            #expect(frames.first == one)
            #expect(frames.last?.payload == [0xFF, 0xFF, 0x00, 0x01])
            #expect(reader.bufferedBytes == 0)
        }
    }

    @Test func aFramePastTheLimitsIsMalformed() {
        var reader = SpeechHelperFrame.Reader()
        let huge: [UInt8] = [0, 0, 0x10, 0, 0, 0, 0, 0]  // a 1 MiB header
        #expect(throws: SpeechHelperFrame.Reader.Failure.self) { try huge.withUnsafeBytes { try reader.read($0) } }
    }

    @Test func aHeaderThatIsNotAnObjectIsMalformed() {
        var reader = SpeechHelperFrame.Reader()
        let bytes = SpeechHelperFrame(header: .array([.int(1)])).encoded()
        #expect(throws: SpeechHelperFrame.Reader.Failure.self) { try bytes.withUnsafeBytes { try reader.read($0) } }
    }
}
