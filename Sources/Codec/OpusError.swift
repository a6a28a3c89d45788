/// What can go wrong in the Opus codec, as libopus reports it or as Parley checks before calling it.
public enum OpusError: Error, Equatable, Sendable, CustomStringConvertible {
    /// An argument libopus or Parley refused, with what was wrong.
    case badArgument(String)
    /// The output buffer cannot hold the decoded or encoded result.
    case bufferTooSmall
    /// The packet is corrupt, truncated, or not Opus.
    case invalidPacket
    /// Larger than any Opus packet can be (RFC 6716 section 3.2.5: at most 48 frames of 1,275 bytes).
    case packetTooLarge(bytes: Int)
    case internalError
    case unimplemented
    case invalidState
    case allocationFailed
    /// A code this wrapper does not know.
    case libopus(code: Int32)

    /// Maps a negative libopus return code.
    init(code: Int32) {
        switch code {
        case -1: self = .badArgument("libopus: invalid argument")
        case -2: self = .bufferTooSmall
        case -3: self = .internalError
        case -4: self = .invalidPacket
        case -5: self = .unimplemented
        case -6: self = .invalidState
        case -7: self = .allocationFailed
        default: self = .libopus(code: code)
        }
    }

    public var description: String {
        switch self {
        case .badArgument(let why): return "bad argument: \(why)"
        case .bufferTooSmall: return "output buffer too small"
        case .invalidPacket: return "invalid or corrupt Opus packet"
        case .packetTooLarge(let bytes): return "Opus packet of \(bytes) bytes is larger than any valid packet"
        case .internalError: return "libopus internal error"
        case .unimplemented: return "libopus: request not implemented"
        case .invalidState: return "libopus: invalid codec state"
        case .allocationFailed: return "libopus: allocation failed"
        case .libopus(let code): return "libopus error \(code)"
        }
    }
}
