/// Decodes Opus packets to interleaved PCM (RFC 6716), with loss concealment and in-band FEC.
///
/// One decoder per stream: libopus keeps state between packets. Not thread-safe; use it on one
/// thread at a time. A packet that fails to decode leaves the decoder usable for the next one.
public final class OpusDecoder {
    /// RFC 6716 section 3.2.5: a code-3 packet holds at most 48 frames of at most 1,275 bytes.
    public static let maxPacketBytes = 48 * 1275

    public let format: AudioFormat
    /// Bytes of libopus state, as libopus reports it; what a session's memory account charges.
    public let stateBytes: Int
    private let state: OpaquePointer

    public init(format: AudioFormat = .voice) throws(OpusError) {
        self.format = format
        stateBytes = LibOpus.decoderSize(format.channels)
        state = try LibOpus.makeDecoder(format)
    }

    deinit { LibOpus.release(state) }

    /// Samples per channel of the longest packet (120 ms): an output this size always suffices.
    public var maxSamplesPerChannel: Int { FrameDuration.ms120.samplesPerChannel(at: format.sampleRate) }

    /// Decodes one packet into `pcm` (interleaved); returns samples per channel written.
    public func decode(_ packet: UnsafeRawBufferPointer, into pcm: UnsafeMutableBufferPointer<Int16>) throws(OpusError) -> Int {
        try validate(packet)
        return try LibOpus.decode(state, packet, into: pcm, samplesPerChannel: capacity(pcm.count), fec: false)
    }

    public func decode(_ packet: UnsafeRawBufferPointer, into pcm: UnsafeMutableBufferPointer<Float>) throws(OpusError) -> Int {
        try validate(packet)
        return try LibOpus.decodeFloat(state, packet, into: pcm, samplesPerChannel: capacity(pcm.count), fec: false)
    }

    /// Decodes one packet into a new array. Allocates: the hot path uses `decode(_:into:)`.
    public func decode(_ packet: [UInt8]) throws(OpusError) -> [Int16] {
        var pcm = [Int16](repeating: 0, count: maxSamplesPerChannel * format.channels.rawValue)
        // Array's buffer accessors rethrow untyped errors: carry the typed one out in a Result.
        let n = try packet.withUnsafeBytes { bytes in
            pcm.withUnsafeMutableBufferPointer { out in Result { () throws(OpusError) in try decode(bytes, into: out) } }
        }.get()
        pcm.removeLast(pcm.count - n * format.channels.rawValue)
        return pcm
    }

    /// Packet loss concealment: invents `duration` of audio for a packet that never arrived, from
    /// what came before.
    public func concealLoss(_ duration: FrameDuration, into pcm: UnsafeMutableBufferPointer<Int16>) throws(OpusError) -> Int {
        let samples = try fitting(duration, pcm.count)
        return try LibOpus.decode(state, nil, into: pcm, samplesPerChannel: samples, fec: false)
    }

    /// Recovers a lost packet from the in-band FEC that `next` (the packet after it) carries. When
    /// `next` has no FEC data libopus conceals instead, so this never does worse than
    /// `concealLoss`. Decode `next` itself afterwards as usual.
    public func recoverLoss(_ duration: FrameDuration, from next: UnsafeRawBufferPointer, into pcm: UnsafeMutableBufferPointer<Int16>) throws(OpusError) -> Int {
        try validate(next)
        let samples = try fitting(duration, pcm.count)
        return try LibOpus.decode(state, next, into: pcm, samplesPerChannel: samples, fec: true)
    }

    /// Forgets the stream so far (for a new utterance on the same decoder).
    public func reset() { LibOpus.resetDecoder(state) }

    /// Samples per channel of the last packet decoded or concealed.
    public var lastPacketSamples: Int { LibOpus.lastPacketDuration(state) }

    /// Samples per channel `packet` will decode to, from its header alone.
    public func samplesPerChannel(in packet: UnsafeRawBufferPointer) throws(OpusError) -> Int {
        try validate(packet)
        return try LibOpus.packetSamples(packet, at: format.sampleRate)
    }

    private func validate(_ packet: UnsafeRawBufferPointer) throws(OpusError) {
        // An empty packet means "lost" to libopus; Parley asks for that explicitly instead.
        guard !packet.isEmpty else { throw .invalidPacket }
        guard packet.count <= Self.maxPacketBytes else { throw .packetTooLarge(bytes: packet.count) }
    }

    private func capacity(_ count: Int) -> Int { count / format.channels.rawValue }

    private func fitting(_ duration: FrameDuration, _ count: Int) throws(OpusError) -> Int {
        let samples = duration.samplesPerChannel(at: format.sampleRate)
        guard samples <= capacity(count) else { throw .bufferTooSmall }
        return samples
    }
}
