import Codec
import JSON
import Models
import SpeechContracts

/// The speech helper's framing (helpers/parley_speech.py; docs/protocol.md, "The speech helper"):
/// each message either way is a little-endian u32 header length, a u32 payload length, the JSON
/// header, then the payload's raw bytes (pcm16 little-endian for audio). JSON for the few fields a
/// request has, raw bytes for the audio, which base64 would grow by a third.
public struct SpeechHelperFrame: Sendable, Equatable {
    public var header: JSON
    public var payload: [UInt8]

    public static let maxHeaderBytes = SpeechHelperContract.maxHeaderBytes
    public static let maxPayloadBytes = SpeechHelperContract.maxPayloadBytes

    public init(header: JSON, payload: [UInt8] = []) {
        self.header = header
        self.payload = payload
    }

    /// A request: `op`, `id` and the operation's other fields.
    public init(_ op: SpeechHelperContract.Operation, id: UInt64, _ fields: [(String, JSON)] = [], payload: [UInt8] = []) {
        self.init(header: Self.header(op, id: id, fields), payload: payload)
    }

    public static func header(_ op: SpeechHelperContract.Operation, id: UInt64, _ fields: [(String, JSON)] = []) -> JSON {
        .object([("op", .string(op.rawValue)), ("id", .int(Int(id)))] + fields)
    }

    /// The message's bytes.
    public func encoded() -> [UInt8] {
        let body = Array(header.description.utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(8 + body.count + payload.count)
        bytes.appendLittleEndian(UInt32(body.count))
        bytes.appendLittleEndian(UInt32(payload.count))
        bytes += body
        bytes += payload
        return bytes
    }

    /// The message's bytes for pcm16 audio.
    public static func encoded(header: JSON, samples: ArraySlice<Int16>) -> [UInt8] {
        SpeechHelperFrame(header: header, payload: PCM.littleEndianBytes(Array(samples))).encoded()
    }

    /// Splits a byte stream into frames: bytes in as they arrive, whole frames out. A frame past
    /// the limits or a header that is not a JSON object is `malformed`, and the stream is no
    /// longer worth reading.
    public struct Reader: Sendable {
        public enum Failure: Error, Equatable { case malformed(String) }

        private var buffered: [UInt8] = []

        public init() {}

        public var bufferedBytes: Int { buffered.count }

        public mutating func read(_ bytes: UnsafeRawBufferPointer) throws(Failure) -> [SpeechHelperFrame] {
            buffered += bytes
            var frames: [SpeechHelperFrame] = []
            var offset = 0
            while buffered.count - offset >= 8 {
                let headerLength = Int(buffered.littleEndian(at: offset, as: UInt32.self))
                let payloadLength = Int(buffered.littleEndian(at: offset + 4, as: UInt32.self))
                guard headerLength <= SpeechHelperFrame.maxHeaderBytes, payloadLength <= SpeechHelperFrame.maxPayloadBytes else {
                    throw .malformed("a frame of \(headerLength) + \(payloadLength) bytes, past the limits")
                }
                let end = offset + 8 + headerLength + payloadLength
                guard buffered.count >= end else { break }
                let text = String(decoding: buffered[(offset + 8)..<(offset + 8 + headerLength)], as: UTF8.self)
                guard let header = try? JSON(parsing: text), header.object != nil else { throw .malformed("a header that is not a JSON object") }
                frames.append(SpeechHelperFrame(header: header, payload: Array(buffered[(end - payloadLength)..<end])))
                offset = end
            }
            buffered.removeFirst(offset)
            return frames
        }
    }
}
