/// Encodes interleaved PCM frames to Opus packets.
///
/// Not thread-safe; one encoder per outgoing stream.
public final class OpusEncoder {
    /// What the encoder optimises for (libopus's "application").
    public enum Application: Sendable {
        /// Speech intelligibility; the right choice for a voice agent.
        case voip
        /// Fidelity to the input, music included.
        case audio
        /// Lowest delay, CELT only.
        case restrictedLowDelay
    }

    /// The encoder settings that matter for voice.
    public struct Settings: Sendable, Equatable {
        /// Bits per second; nil lets libopus choose for the format.
        public var bitrate: Int?
        /// 0 (cheapest) to 10 (best quality per bit, libopus's default).
        public var complexity: Int
        /// Discontinuous transmission: near-silent frames become tiny packets (or none).
        public var dtx: Bool
        /// In-band forward error correction: each packet carries a coarse copy of the previous one.
        public var inbandFEC: Bool
        /// The loss rate FEC should plan for, 0-100.
        public var expectedPacketLossPercent: Int
        /// Tells the encoder the input is speech.
        public var voiceSignal: Bool

        public init(bitrate: Int? = 32_000, complexity: Int = 10, dtx: Bool = false, inbandFEC: Bool = false,
                    expectedPacketLossPercent: Int = 0, voiceSignal: Bool = true) {
            self.bitrate = bitrate
            self.complexity = complexity
            self.dtx = dtx
            self.inbandFEC = inbandFEC
            self.expectedPacketLossPercent = expectedPacketLossPercent
            self.voiceSignal = voiceSignal
        }
    }

    /// Room for one packet of any duration at any bitrate: libopus's recommended output size.
    public static let maxPacketBytes = 4000

    public let format: AudioFormat
    public let application: Application
    public private(set) var settings: Settings
    /// Bytes of libopus state, as libopus reports it.
    public let stateBytes: Int
    private let state: OpaquePointer

    public init(format: AudioFormat = .voice, application: Application = .voip, settings: Settings = Settings()) throws(OpusError) {
        self.format = format
        self.application = application
        self.settings = settings
        stateBytes = LibOpus.encoderSize(format.channels)
        let mode = switch application {
        case .voip: LibOpus.applicationVoIP
        case .audio: LibOpus.applicationAudio
        case .restrictedLowDelay: LibOpus.applicationLowDelay
        }
        state = try LibOpus.makeEncoder(format, application: mode)
        // Every property is set, so if this throws, deinit runs and releases the state.
        try apply(settings)
    }

    deinit { LibOpus.release(state) }

    public func apply(_ settings: Settings) throws(OpusError) {
        guard (0...10).contains(settings.complexity) else { throw .badArgument("complexity \(settings.complexity) is not 0...10") }
        guard (0...100).contains(settings.expectedPacketLossPercent) else { throw .badArgument("packet loss \(settings.expectedPacketLossPercent)% is not 0...100") }
        if let bitrate = settings.bitrate, !(500...512_000).contains(bitrate) { throw .badArgument("bitrate \(bitrate) is not 500...512000") }
        try LibOpus.setBitrate(state, settings.bitrate)
        try LibOpus.setComplexity(state, settings.complexity)
        try LibOpus.setDTX(state, settings.dtx)
        try LibOpus.setInbandFEC(state, settings.inbandFEC)
        try LibOpus.setPacketLossPercent(state, settings.expectedPacketLossPercent)
        try LibOpus.setVoiceSignal(state, settings.voiceSignal)
        self.settings = settings
    }

    /// Encodes one frame (interleaved; its length fixes the frame's duration) into `packet`;
    /// returns the packet's length in bytes. With DTX on, silence may give packets of 1-2 bytes.
    public func encode(_ pcm: UnsafeBufferPointer<Int16>, into packet: UnsafeMutableRawBufferPointer) throws(OpusError) -> Int {
        try LibOpus.encode(state, pcm, samplesPerChannel: try frameSamples(pcm.count), into: packet)
    }

    public func encode(_ pcm: UnsafeBufferPointer<Float>, into packet: UnsafeMutableRawBufferPointer) throws(OpusError) -> Int {
        try LibOpus.encodeFloat(state, pcm, samplesPerChannel: try frameSamples(pcm.count), into: packet)
    }

    /// Encodes one frame into a new array. Allocates: the hot path uses `encode(_:into:)`.
    public func encode(_ pcm: [Int16]) throws(OpusError) -> [UInt8] {
        var packet = [UInt8](repeating: 0, count: Self.maxPacketBytes)
        // Array's buffer accessors rethrow untyped errors: carry the typed one out in a Result.
        let n = try pcm.withUnsafeBufferPointer { input in
            packet.withUnsafeMutableBytes { out in Result { () throws(OpusError) in try encode(input, into: out) } }
        }.get()
        packet.removeLast(packet.count - n)
        return packet
    }

    /// The bitrate in effect (libopus's choice when `settings.bitrate` is nil).
    public var bitrate: Int { LibOpus.bitrate(state) }
    /// Samples per channel the encoder delays its output by; decoders skip this much ("pre-skip").
    public var lookahead: Int { LibOpus.lookahead(state) }
    /// True while DTX is suppressing near-silent frames.
    public var isInDTX: Bool { LibOpus.isInDTX(state) }

    public func reset() { LibOpus.resetEncoder(state) }

    /// Samples per channel in a frame of `count` interleaved samples, if that is an Opus duration.
    private func frameSamples(_ count: Int) throws(OpusError) -> Int {
        let perChannel = count / format.channels.rawValue
        guard count % format.channels.rawValue == 0, FrameDuration(samplesPerChannel: perChannel, at: format.sampleRate) != nil else {
            throw .badArgument("\(count) samples is not an Opus frame (2.5-120 ms) at \(format)")
        }
        return perChannel
    }
}
