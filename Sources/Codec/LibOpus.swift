import COpus
#if canImport(Glibc)
import Glibc
#endif

/// Every libopus call Parley makes, wrapped once: return codes become `OpusError`, and nothing
/// outside this file touches the C API.
enum LibOpus {
    static var version: String { String(cString: opus_get_version_string()) }

    /// Turns a libopus result into a count, or throws for a negative code.
    @inline(__always)
    static func check(_ result: Int32) throws(OpusError) -> Int {
        guard result >= 0 else { throw OpusError(code: result) }
        return Int(result)
    }

    // MARK: Decoder

    static func decoderSize(_ channels: Channels) -> Int { Int(opus_decoder_get_size(Int32(channels.rawValue))) }

    /// A decoder in memory Parley allocates, so its size is known exactly.
    static func makeDecoder(_ format: AudioFormat) throws(OpusError) -> OpaquePointer {
        guard let memory = malloc(decoderSize(format.channels)) else { throw OpusError.allocationFailed }
        let decoder = OpaquePointer(memory)
        let rc = opus_decoder_init(decoder, Int32(format.sampleRate.rawValue), Int32(format.channels.rawValue))
        guard rc == OPUS_OK else { free(memory); throw OpusError(code: rc) }
        return decoder
    }

    static func release(_ state: OpaquePointer) { free(UnsafeMutableRawPointer(state)) }

    /// opus_decode: `packet` nil asks for loss concealment; `fec` decodes the in-band redundancy
    /// of the packet for the one before it.
    @inline(__always)
    static func decode(_ decoder: OpaquePointer, _ packet: UnsafeRawBufferPointer?, into pcm: UnsafeMutableBufferPointer<Int16>,
                       samplesPerChannel: Int, fec: Bool) throws(OpusError) -> Int {
        guard let out = pcm.baseAddress else { throw OpusError.bufferTooSmall }
        return try check(opus_decode(decoder, packet?.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(packet?.count ?? 0),
                                     out, Int32(samplesPerChannel), fec ? 1 : 0))
    }

    @inline(__always)
    static func decodeFloat(_ decoder: OpaquePointer, _ packet: UnsafeRawBufferPointer?, into pcm: UnsafeMutableBufferPointer<Float>,
                            samplesPerChannel: Int, fec: Bool) throws(OpusError) -> Int {
        guard let out = pcm.baseAddress else { throw OpusError.bufferTooSmall }
        return try check(opus_decode_float(decoder, packet?.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(packet?.count ?? 0),
                                           out, Int32(samplesPerChannel), fec ? 1 : 0))
    }

    static func resetDecoder(_ decoder: OpaquePointer) { _ = parley_opus_decoder_reset(decoder) }

    static func lastPacketDuration(_ decoder: OpaquePointer) -> Int {
        var value: Int32 = 0
        _ = parley_opus_get_last_packet_duration(decoder, &value)
        return Int(value)
    }

    /// Samples per channel the packet decodes to at `rate`, read from its TOC byte and frame count.
    static func packetSamples(_ packet: UnsafeRawBufferPointer, at rate: SampleRate) throws(OpusError) -> Int {
        guard let bytes = packet.baseAddress?.assumingMemoryBound(to: UInt8.self) else { throw OpusError.invalidPacket }
        return try check(opus_packet_get_nb_samples(bytes, Int32(packet.count), Int32(rate.rawValue)))
    }

    // MARK: Encoder

    static func encoderSize(_ channels: Channels) -> Int { Int(opus_encoder_get_size(Int32(channels.rawValue))) }

    static func makeEncoder(_ format: AudioFormat, application: Int32) throws(OpusError) -> OpaquePointer {
        guard let memory = malloc(encoderSize(format.channels)) else { throw OpusError.allocationFailed }
        let encoder = OpaquePointer(memory)
        let rc = opus_encoder_init(encoder, Int32(format.sampleRate.rawValue), Int32(format.channels.rawValue), application)
        guard rc == OPUS_OK else { free(memory); throw OpusError(code: rc) }
        return encoder
    }

    @inline(__always)
    static func encode(_ encoder: OpaquePointer, _ pcm: UnsafeBufferPointer<Int16>, samplesPerChannel: Int,
                       into packet: UnsafeMutableRawBufferPointer) throws(OpusError) -> Int {
        guard let input = pcm.baseAddress else { throw OpusError.badArgument("empty frame") }
        guard let out = packet.baseAddress?.assumingMemoryBound(to: UInt8.self) else { throw OpusError.bufferTooSmall }
        return try check(opus_encode(encoder, input, Int32(samplesPerChannel), out, Int32(packet.count)))
    }

    @inline(__always)
    static func encodeFloat(_ encoder: OpaquePointer, _ pcm: UnsafeBufferPointer<Float>, samplesPerChannel: Int,
                            into packet: UnsafeMutableRawBufferPointer) throws(OpusError) -> Int {
        guard let input = pcm.baseAddress else { throw OpusError.badArgument("empty frame") }
        guard let out = packet.baseAddress?.assumingMemoryBound(to: UInt8.self) else { throw OpusError.bufferTooSmall }
        return try check(opus_encode_float(encoder, input, Int32(samplesPerChannel), out, Int32(packet.count)))
    }

    static func setBitrate(_ e: OpaquePointer, _ bitsPerSecond: Int?) throws(OpusError) {
        _ = try check(parley_opus_set_bitrate(e, bitsPerSecond.map(Int32.init) ?? OPUS_AUTO))
    }

    static func bitrate(_ e: OpaquePointer) -> Int {
        var value: Int32 = 0
        _ = parley_opus_get_bitrate(e, &value)
        return Int(value)
    }

    static func setComplexity(_ e: OpaquePointer, _ value: Int) throws(OpusError) { _ = try check(parley_opus_set_complexity(e, Int32(value))) }
    static func setDTX(_ e: OpaquePointer, _ on: Bool) throws(OpusError) { _ = try check(parley_opus_set_dtx(e, on ? 1 : 0)) }
    static func setInbandFEC(_ e: OpaquePointer, _ on: Bool) throws(OpusError) { _ = try check(parley_opus_set_inband_fec(e, on ? 1 : 0)) }
    static func setPacketLossPercent(_ e: OpaquePointer, _ value: Int) throws(OpusError) { _ = try check(parley_opus_set_packet_loss_perc(e, Int32(value))) }
    static func setVoiceSignal(_ e: OpaquePointer, _ voice: Bool) throws(OpusError) { _ = try check(parley_opus_set_signal_voice(e, voice ? 1 : 0)) }
    static func resetEncoder(_ e: OpaquePointer) { _ = parley_opus_encoder_reset(e) }

    static func isInDTX(_ e: OpaquePointer) -> Bool {
        var value: Int32 = 0
        _ = parley_opus_get_in_dtx(e, &value)
        return value != 0
    }

    static func lookahead(_ e: OpaquePointer) -> Int {
        var value: Int32 = 0
        _ = parley_opus_get_lookahead(e, &value)
        return Int(value)
    }

    static let applicationVoIP = OPUS_APPLICATION_VOIP
    static let applicationAudio = OPUS_APPLICATION_AUDIO
    static let applicationLowDelay = OPUS_APPLICATION_RESTRICTED_LOWDELAY
}
