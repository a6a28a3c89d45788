import Testing
@testable import Server
import TestSupport

/// Drives the reader the way a connection does: bytes arrive in chunks, unconsumed bytes are kept
/// and put in front of the next chunk, and message pieces are joined.
struct ReaderHarness {
    enum Seen: Equatable {
        case message(WebSocketMessageKind, [UInt8])
        case ping([UInt8])
        case pong([UInt8])
        case close(UInt16, String)
        case failure(UInt16)
    }

    var reader: WebSocketFrameReader
    var seen: [Seen] = []
    private var pending: [UInt8] = []
    private var message: [UInt8] = []
    private var failed = false

    init(maxMessageBytes: Int = 1 << 20) {
        reader = WebSocketFrameReader(maxMessageBytes: maxMessageBytes)
    }

    mutating func feed(_ bytes: [UInt8], chunk: Int = .max) {
        var i = 0
        while i < bytes.count && !failed {
            let end = min(bytes.count, i + chunk)
            var input = pending + bytes[i..<end]
            i = end
            let consumed = input.withUnsafeMutableBytes { process($0) }
            pending = Array(input[consumed...])
        }
    }

    private mutating func process(_ buffer: UnsafeMutableRawBufferPointer) -> Int {
        var offset = 0
        while !failed {
            let (consumed, event) = reader.read(UnsafeMutableRawBufferPointer(rebasing: buffer[offset...]))
            offset += consumed
            switch event {
            case .needMore: return offset
            case .data(let kind, let chunk, _, let last):
                message += chunk
                if last { seen.append(.message(kind, message)); message = [] }
            case .ping(let p): seen.append(.ping(Array(p)))
            case .pong(let p): seen.append(.pong(Array(p)))
            case .close(let code, let reason): seen.append(.close(code.rawValue, String(decoding: reason, as: UTF8.self)))
            case .failure(let code, _): seen.append(.failure(code.rawValue)); failed = true
            }
            if offset == buffer.count && !reader.isInsideFrame { return offset }
        }
        return buffer.count
    }
}

@Suite struct WebSocketFrameReaderTests {
    func frame(_ opcode: UInt8, _ payload: [UInt8], fin: Bool = true, rsv: UInt8 = 0) -> [UInt8] {
        TestClient.frame(opcode, payload, fin: fin, rsv: rsv)
    }

    func read(_ bytes: [UInt8], chunk: Int = .max, max: Int = 1 << 20) -> [ReaderHarness.Seen] {
        var harness = ReaderHarness(maxMessageBytes: max)
        harness.feed(bytes, chunk: chunk)
        return harness.seen
    }

    @Test func readsRFC6455MaskedHelloExample() {
        // RFC 6455 section 5.7: a single-frame masked text message containing "Hello".
        let bytes: [UInt8] = [0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58]
        #expect(read(bytes) == [.message(.text, Array("Hello".utf8))])
    }

    @Test func readsRFC6455MaskedPingExample() {
        #expect(read(frame(0x9, Array("Hello".utf8))) == [.ping(Array("Hello".utf8))])
    }

    @Test func unmaskedClientFrameCloses1002() {
        // RFC 6455 section 5.7's unmasked "Hello" is a server frame; from a client it is an error.
        #expect(read([0x81, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F]) == [.failure(1002)])
    }

    @Test(arguments: [0, 1, 125, 126, 127, 65535, 65536, 200_000])
    func readsEveryLengthEncoding(_ length: Int) {
        let payload = (0..<length).map { UInt8(truncatingIfNeeded: $0 * 7) }
        #expect(read(frame(0x2, payload)) == [.message(.binary, payload)])
        #expect(read(frame(0x2, payload), chunk: 1000) == [.message(.binary, payload)])
    }

    @Test func sameEventsWhenBytesArriveOneAtATime() {
        let stream = frame(0x1, Array("Hel".utf8), fin: false) + frame(0x9, [1, 2]) + frame(0x0, Array("lo".utf8))
            + frame(0x2, [9, 9, 9]) + frame(0x8, [0x03, 0xE8] + Array("bye".utf8))
        let expected: [ReaderHarness.Seen] = [.ping([1, 2]), .message(.text, Array("Hello".utf8)), .message(.binary, [9, 9, 9]), .close(1000, "bye")]
        #expect(read(stream) == expected)
        #expect(read(stream, chunk: 1) == expected)
        #expect(read(stream, chunk: 3) == expected)
    }

    @Test func controlFramesMayInterleaveFragments() {
        let stream = frame(0x2, [1], fin: false) + frame(0xA, []) + frame(0x0, [2], fin: false) + frame(0x9, [7]) + frame(0x0, [3])
        #expect(read(stream) == [.pong([]), .ping([7]), .message(.binary, [1, 2, 3])])
    }

    @Test func reservedBitsClose1002() {
        for rsv in 1...7 as ClosedRange<UInt8> {
            #expect(read(frame(0x1, [0x41], rsv: rsv)) == [.failure(1002)])
        }
    }

    @Test(arguments: [3, 4, 5, 6, 7, 0xB, 0xC, 0xD, 0xE, 0xF] as [UInt8])
    func reservedOpcodesClose1002(_ opcode: UInt8) {
        #expect(read(frame(opcode, [])) == [.failure(1002)])
    }

    @Test func controlFrameLongerThan125Closes1002() {
        #expect(read(frame(0x9, Array(repeating: 0x2A, count: 126))) == [.failure(1002)])
    }

    @Test func fragmentedControlFrameCloses1002() {
        #expect(read(frame(0x9, [1], fin: false)) == [.failure(1002)])
    }

    @Test func continuationWithoutAMessageCloses1002() {
        #expect(read(frame(0x0, [1])) == [.failure(1002)])
    }

    @Test func newMessageInsideAFragmentedOneCloses1002() {
        #expect(read(frame(0x1, [0x41], fin: false) + frame(0x1, [0x42])) == [.failure(1002)])
    }

    @Test func nonMinimalLengthCloses1002() {
        // 5 bytes announced with the 16-bit form.
        let bytes: [UInt8] = [0x82, 0x80 | 126, 0, 5, 0, 0, 0, 0, 1, 2, 3, 4, 5]
        #expect(read(bytes) == [.failure(1002)])
    }

    @Test func invalidUTF8Closes1007() {
        #expect(read(frame(0x1, [0xCE, 0xBA, 0xED, 0xA0, 0x80])) == [.failure(1007)])
    }

    @Test func invalidUTF8FailsFastInTheFirstFragment() {
        // The rest of the message never arrives, yet the failure is reported.
        #expect(read(frame(0x1, [0x41, 0xC0, 0xAF], fin: false)) == [.failure(1007)])
    }

    @Test func invalidUTF8FailsFastInsideAPartlyReceivedFrame() {
        let whole = frame(0x1, [0x41, 0xFF] + Array(repeating: 0x41, count: 1000))
        #expect(read(Array(whole.prefix(20))) == [.failure(1007)])
    }

    @Test func textEndingInsideACodePointCloses1007() {
        #expect(read(frame(0x1, [0xCE], fin: false) + frame(0x0, [])) == [.failure(1007)])
    }

    @Test func utf8SplitAcrossFragmentsIsAccepted() {
        let text = Array("κόσμε".utf8)
        let stream = frame(0x1, Array(text[..<3]), fin: false) + frame(0x0, Array(text[3...]))
        #expect(read(stream) == [.message(.text, text)])
    }

    @Test func messageOverTheLimitCloses1009() {
        #expect(read(frame(0x2, Array(repeating: 0, count: 101)), max: 100) == [.failure(1009)])
        let fragments = frame(0x2, Array(repeating: 0, count: 60), fin: false) + frame(0x0, Array(repeating: 0, count: 60))
        #expect(read(fragments, max: 100) == [.failure(1009)])
        #expect(read(frame(0x2, Array(repeating: 0, count: 100)), max: 100) == [.message(.binary, Array(repeating: 0, count: 100))])
    }

    @Test func closeFramePayloadRules() {
        #expect(read(frame(0x8, [])) == [.close(1005, "")])
        #expect(read(frame(0x8, [0x03])) == [.failure(1002)])
        #expect(read(frame(0x8, [0x03, 0xE8, 0xFF])) == [.failure(1007)])
        for code in [0, 999, 1004, 1005, 1006, 1015, 1016, 1100, 2000, 2999, 5000, 65535] {
            #expect(read(frame(0x8, [UInt8(code >> 8), UInt8(code & 0xFF)])) == [.failure(1002)], "code \(code)")
        }
        for code in [1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 3000, 3999, 4000, 4999] {
            #expect(read(frame(0x8, [UInt8(code >> 8), UInt8(code & 0xFF)])) == [.close(UInt16(code), "")], "code \(code)")
        }
    }

    @Test func unmaskingHonoursTheKeyOffsetAcrossChunks() {
        let payload = (0..<37).map { UInt8($0) }
        let mask: UInt32 = 0x3D21_FA37
        var masked = payload.enumerated().map { $0.element ^ UInt8(truncatingIfNeeded: mask >> (UInt32($0.offset % 4) * 8)) }
        masked.withUnsafeMutableBytes { bytes in
            WebSocketFrameReader.unmask(UnsafeMutableRawBufferPointer(rebasing: bytes[0..<5]), mask: mask, offset: 0)
            WebSocketFrameReader.unmask(UnsafeMutableRawBufferPointer(rebasing: bytes[5..<37]), mask: mask, offset: 1)
        }
        #expect(masked == payload)
    }
}
