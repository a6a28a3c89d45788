import Codec
import Testing
import TestSupport

@Suite struct OpusCodecTests {
    static let formats: [AudioFormat] = [SampleRate.hz48000, .hz24000, .hz16000].flatMap { rate in
        Channels.allCases.map { AudioFormat(sampleRate: rate, channels: $0) }
    }

    /// Encodes `signal` frame by frame and decodes every packet; returns the decoded stream.
    func roundTrip(_ signal: [Int16], format: AudioFormat, frame: FrameDuration, settings: OpusEncoder.Settings = .init()) throws -> [Int16] {
        let encoder = try OpusEncoder(format: format, settings: settings)
        let decoder = try OpusDecoder(format: format)
        let step = frame.samplesPerChannel(at: format.sampleRate) * format.channels.rawValue
        var out: [Int16] = []
        for start in stride(from: 0, to: signal.count - step + 1, by: step) {
            let packet = try encoder.encode(Array(signal[start..<(start + step)]))
            #expect(!packet.isEmpty && packet.count <= 1275 * 3)
            let pcm = try decoder.decode(packet)
            #expect(pcm.count == step)
            out += pcm
        }
        return out
    }

    @Test(arguments: formats, [FrameDuration.ms10, .ms20, .ms40, .ms60])
    func roundTripKeepsLengthAndLevel(format: AudioFormat, frame: FrameDuration) throws {
        let rate = format.sampleRate.rawValue
        let signal = Signals.voiced(seconds: 1.2, rate: rate, channels: format.channels.rawValue)
        let decoded = try roundTrip(signal, format: format, frame: frame)
        #expect(decoded.count == signal.count / (frame.samplesPerChannel(at: format.sampleRate) * format.channels.rawValue)
            * frame.samplesPerChannel(at: format.sampleRate) * format.channels.rawValue)
        // Past the encoder's start-up, the level is kept within 3 dB.
        let skip = rate / 5 * format.channels.rawValue
        let difference = PCM.dBFS(decoded.dropFirst(skip)) - PCM.dBFS(signal.dropFirst(skip).prefix(decoded.count - skip))
        #expect(abs(difference) < 3, "level changed by \(difference) dB")
    }

    @Test func stateSizesComeFromLibopus() throws {
        let mono = try OpusDecoder(format: .voice), stereo = try OpusDecoder(format: AudioFormat(sampleRate: .hz48000, channels: .stereo))
        #expect(mono.stateBytes > 10_000 && stereo.stateBytes > mono.stateBytes)
        #expect(try OpusEncoder().stateBytes > mono.stateBytes)
        #expect(OpusLibrary.version.hasPrefix("libopus "))
    }

    @Test func lossIsConcealedWithAFrameOfPlausibleAudio() throws {
        let encoder = try OpusEncoder(), decoder = try OpusDecoder()
        let signal = Signals.voiced(seconds: 0.4, rate: 48000)
        var pcm = [Int16](repeating: 0, count: decoder.maxSamplesPerChannel)
        for start in stride(from: 0, to: 9600, by: 960) { _ = try decoder.decode(try encoder.encode(Array(signal[start..<(start + 960)]))) }
        let n = try pcm.withUnsafeMutableBufferPointer { try decoder.concealLoss(.ms20, into: $0) }
        #expect(n == 960)
        // Concealment continues the voice rather than falling silent.
        #expect(PCM.dBFS(pcm.prefix(n)) > -30)
    }

    @Test func inBandFECRecoversALostPacketBetterThanConcealment() throws {
        // FEC (SILK's LBRR) needs speech and enough bitrate: at 16 kbit/s libopus sends none.
        let settings = OpusEncoder.Settings(bitrate: 24_000, inbandFEC: true, expectedPacketLossPercent: 20)
        let encoder = try OpusEncoder(settings: settings)
        let wav = try WAVFile.read(path: try SpeechVectors.wav("What is the weather like in Paris"))
        let speech = try Resampler(from: wav.sampleRate, to: 48000).process(wav.samples)
        let signal = Array(speech.prefix(48000))
        let packets = try stride(from: 0, to: 48000, by: 960).map { try encoder.encode(Array(signal[$0..<($0 + 960)])) }
        let lost = 30
        func decodeAll(recovering: Bool) throws -> [Int16] {
            let decoder = try OpusDecoder()
            var out: [Int16] = []
            var frame = [Int16](repeating: 0, count: decoder.maxSamplesPerChannel)
            for (i, packet) in packets.enumerated() {
                if i == lost {
                    let n = try frame.withUnsafeMutableBufferPointer { buffer in
                        try packets[i + 1].withUnsafeBytes { next in
                            recovering ? try decoder.recoverLoss(.ms20, from: next, into: buffer) : try decoder.concealLoss(.ms20, into: buffer)
                        }
                    }
                    out += frame.prefix(n)
                } else {
                    out += try decoder.decode(packet)
                }
            }
            return out
        }
        let concealed = try decodeAll(recovering: false)
        let recovered = try decodeAll(recovering: true)
        let clean = try roundTrip(signal, format: .voice, frame: .ms20, settings: settings)
        let range = (lost * 960)..<((lost + 1) * 960)
        let fecError = Signals.relativeError(clean[range], recovered[range])
        let plcError = Signals.relativeError(clean[range], concealed[range])
        #expect(recovered.count == clean.count)
        #expect(fecError < plcError, "FEC error \(fecError) vs concealment \(plcError)")
    }

    @Test func corruptPacketsGetTypedErrorsAndTheDecoderGoesOn() throws {
        let encoder = try OpusEncoder(), decoder = try OpusDecoder()
        let good = try encoder.encode(Signals.voiced(seconds: 0.02, rate: 48000))
        #expect(throws: OpusError.invalidPacket) { try decoder.decode([]) }
        #expect(throws: OpusError.packetTooLarge(bytes: OpusDecoder.maxPacketBytes + 1)) {
            try decoder.decode([UInt8](repeating: 0xFF, count: OpusDecoder.maxPacketBytes + 1))
        }
        // A code-3 packet claiming 63 frames (more than 120 ms): invalid by RFC 6716 section 3.2.5.
        #expect(throws: OpusError.invalidPacket) { try decoder.decode([0x03, 0x3F, 0x00]) }
        var random = SeededRandom(seed: 42)
        var errors = 0
        for round in 0..<500 {
            let garbage = round % 2 == 0 ? random.bytes(Int.random(in: 1...400, using: &random)) : random.mutate(good, flips: 3)
            do { _ = try decoder.decode(garbage) } catch { errors += 1 }
            #expect(try decoder.decode(good).count == 960, "decoder unusable after round \(round)")
        }
        #expect(errors > 0)
    }

    @Test func decodingIntoTooSmallABufferIsAnError() throws {
        let packet = try OpusEncoder().encode(Signals.voiced(seconds: 0.02, rate: 48000))
        var small = [Int16](repeating: 0, count: 480)
        #expect(throws: OpusError.bufferTooSmall) {
            try packet.withUnsafeBytes { bytes in try small.withUnsafeMutableBufferPointer { try OpusDecoder().decode(bytes, into: $0) } }
        }
    }

    @Test func encoderRefusesBadSettingsAndFrameSizes() throws {
        #expect(throws: OpusError.self) { try OpusEncoder(settings: .init(complexity: 11)) }
        #expect(throws: OpusError.self) { try OpusEncoder(settings: .init(bitrate: 100)) }
        #expect(throws: OpusError.self) { try OpusEncoder(settings: .init(expectedPacketLossPercent: 101)) }
        #expect(throws: OpusError.self) { try OpusEncoder().encode([Int16](repeating: 0, count: 1000)) }
        let encoder = try OpusEncoder(settings: .init(bitrate: 48_000))
        #expect(encoder.bitrate == 48_000)
        try encoder.apply(.init(bitrate: 16_000, complexity: 3))
        #expect(encoder.bitrate == 16_000 && encoder.settings.complexity == 3)
        #expect(encoder.lookahead > 0)
    }

    @Test func dtxShrinksSilenceToTinyPackets() throws {
        let encoder = try OpusEncoder(settings: .init(dtx: true))
        let silence = [Int16](repeating: 0, count: 960)
        let sizes = try (0..<60).map { _ in try encoder.encode(silence).count }
        // After a few frames silence becomes 1-byte packets, with a comfort-noise refresh every
        // 400 ms (one packet in 20).
        let tiny = sizes.suffix(40).filter { $0 <= 2 }.count
        #expect(tiny >= 36, "\(sizes)")
        #expect(encoder.isInDTX)
    }

    @Test func floatPathsMatchTheInt16Paths() throws {
        let signal = Signals.voiced(seconds: 0.02, rate: 48000)
        let packet = try OpusEncoder().encode(signal)
        let decoded = try OpusDecoder().decode(packet)
        var floats = [Float](repeating: 0, count: 960)
        let n = try packet.withUnsafeBytes { bytes in try floats.withUnsafeMutableBufferPointer { try OpusDecoder().decode(bytes, into: $0) } }
        #expect(n == 960)
        #expect(zip(decoded, floats).allSatisfy { abs(Int($0) - Int(PCM.int16($1))) <= 1 })
    }
}
