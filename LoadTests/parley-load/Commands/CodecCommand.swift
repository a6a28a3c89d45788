import ArgumentParser
import CCodecBench
import Codec
import JSON
#if canImport(Glibc)
import Glibc
#endif

/// `parley-load codec`: Opus frames per CPU-second through Parley's Swift wrapper and through a
/// plain C loop over libopus, alternated in the same run on the same packets, so the ratio shows
/// what the wrapper costs and nothing else.
struct CodecCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "codec",
        abstract: "Measure Opus decode and encode speed: the Swift wrapper against raw libopus.",
        discussion: """
            The input speech (a WAV file, e.g. from `espeak-ng -w speech.wav "..."`) is resampled to \
            48 kHz mono and encoded into 20 ms packets (VoIP, --bitrate) by Parley's encoder; those \
            packets are what both decoders decode. Times are the thread's CPU time, so the figures \
            are per core.
            """)

    @Option(help: "Speech to use, as a 16-bit PCM WAV file.")
    var input: String

    @Option(help: "Trials of each loop; the median is reported.")
    var trials = 5

    @Option(help: "CPU seconds each trial should take, roughly.")
    var trialSeconds = 1.0

    @Option(help: "Bitrate of the packets decoded, bits per second.")
    var bitrate = 32_000

    @Option(parsing: .upToNextOption, help: "Encoder complexities to measure.")
    var complexities: [Int] = [10, 5, 1]

    @Option(help: "Also write the summary as JSON to this file.")
    var json: String?

    func validate() throws {
        guard trials >= 1, trialSeconds > 0 else { throw ValidationError("--trials and --trial-seconds must be positive") }
        guard complexities.allSatisfy({ (0...10).contains($0) }) else { throw ValidationError("complexities are 0...10") }
    }

    func run() throws {
        let speech = try CodecInput(wavPath: input, profile: .fullband, bitrate: bitrate)
        let wideband = try CodecInput(wavPath: input, profile: .wideband)
        print("parley-load codec: \(speech.packets.count) packets of 20 ms (\(Format.fixed(speech.seconds, 2)) s of speech), \(trials) trials, \(OpusLibrary.version)")
        let decode = try CodecTrial.compare(trials: trials, trialSeconds: trialSeconds, frames: speech.packets.count,
                                            swift: { rounds in try speech.decodeWithSwift(rounds: rounds) },
                                            c: { rounds in speech.decodeWithC(rounds: rounds) })
        print(decode.line("decode FB>48k") + "  fullband \(bitrate / 1000) kbit/s, decoded at 48 kHz")
        // What the server does with what Parley's clients send: wideband packets decoded at 16 kHz.
        let serverDecode = try CodecTrial.compare(trials: trials, trialSeconds: trialSeconds, frames: wideband.packets.count,
                                                  swift: { rounds in try wideband.decodeWithSwift(rounds: rounds, at: .hz16000) },
                                                  c: { rounds in wideband.decodeWithC(rounds: rounds, at: .hz16000) })
        print(serverDecode.line("decode WB>16k") + "  wideband \(wideband.bitrate / 1000) kbit/s, decoded at 16 kHz (the server's path)")
        var encodes: [(Int, CodecTrial.Comparison)] = []
        for complexity in complexities {
            let result = try CodecTrial.compare(trials: trials, trialSeconds: trialSeconds, frames: speech.frames,
                                                swift: { rounds in try speech.encodeWithSwift(rounds: rounds, complexity: complexity) },
                                                c: { rounds in speech.encodeWithC(rounds: rounds, complexity: complexity) })
            print(result.line("encode c=\(complexity)") + "  fullband \(bitrate / 1000) kbit/s")
            encodes.append((complexity, result))
        }
        // The server's reply encoder: 24 kHz, complexity 5 (SpeechOutput).
        let reply = try CodecInput(wavPath: input, profile: .reply)
        let replyEncode = try CodecTrial.compare(trials: trials, trialSeconds: trialSeconds, frames: reply.frames,
                                                 swift: { rounds in try reply.encodeWithSwift(rounds: rounds, complexity: 5) },
                                                 c: { rounds in reply.encodeWithC(rounds: rounds, complexity: 5) })
        print(replyEncode.line("encode reply") + "  24 kHz \(reply.bitrate / 1000) kbit/s, complexity 5 (the server's spoken replies)")
        let decoderBytes = try OpusDecoder().stateBytes, encoderBytes = try OpusEncoder().stateBytes
        let speakers = Int(serverDecode.swiftFramesPerSecond / 50), fullbandSpeakers = Int(decode.swiftFramesPerSecond / 50)
        print("state    decoder \(Format.grouped(decoderBytes)) B, encoder \(Format.grouped(encoderBytes)) B (48 kHz mono, as libopus reports)")
        print("speakers one core decodes in real time: \(Format.grouped(speakers)) wideband at 16 kHz, \(Format.grouped(fullbandSpeakers)) fullband at 48 kHz (50 frames of 20 ms a second each)")
        if let json {
            let report = JSON.object([
                ("command", .string("codec")),
                ("libopus", .string(OpusLibrary.version)),
                ("packets", .int(speech.packets.count)),
                ("bitrate", .int(bitrate)),
                ("decode", decode.json),
                ("decode_wideband_16k", serverDecode.json),
                ("wideband_bitrate", .int(wideband.bitrate)),
                ("encode", .array(encodes.map { .object([("complexity", .int($0.0)), ("result", $0.1.json)]) })),
                ("encode_reply_24k_c5", replyEncode.json),
                ("decoder_state_bytes", .int(decoderBytes)),
                ("encoder_state_bytes", .int(encoderBytes)),
                ("realtime_speakers_per_core", .int(speakers)),
                ("realtime_speakers_per_core_fullband", .int(fullbandSpeakers)),
            ])
            try TextFile.write(report.description + "\n", to: json)
        }
    }
}

/// The speech and its packets, laid out contiguously for both loops.
struct CodecInput {
    let profile: OpusProfile
    let pcm: [Int16]
    let packets: [[UInt8]]
    let packetBytes: [UInt8]
    let lengths: [Int32]
    let bitrate: Int
    var frames: Int { pcm.count / profile.frameSamples }
    var seconds: Double { Double(pcm.count) / Double(profile.sampleRate) }

    init(wavPath: String, profile: OpusProfile = .fullband, bitrate: Int? = nil) throws {
        let wav = try WAVFile.read(path: wavPath)
        let mono = stride(from: 0, to: wav.samples.count, by: wav.channels).map { wav.samples[$0] }
        let resampled = try Resampler(from: wav.sampleRate, to: profile.sampleRate, quality: .desktop).process(mono)
        let frame = profile.frameSamples
        pcm = Array(resampled.prefix(resampled.count / frame * frame))
        guard pcm.count >= frame * 10 else { throw LoadFailure("\(wavPath): under 0.2 s of audio") }
        self.profile = profile
        self.bitrate = bitrate ?? profile.defaultBitrate
        let encoder = try OpusEncoder(format: profile.format, settings: .init(bitrate: self.bitrate))
        let speech = pcm
        packets = try stride(from: 0, to: speech.count, by: frame).map { try encoder.encode(Array(speech[$0..<($0 + frame)])) }
        packetBytes = packets.flatMap { $0 }
        lengths = packets.map { Int32($0.count) }
    }

    /// One 20 ms packet of silence, encoded the same way.
    func silencePacket() throws -> [UInt8] {
        try OpusEncoder(format: profile.format, settings: .init(bitrate: bitrate)).encode([Int16](repeating: 0, count: profile.frameSamples))
    }

    /// Decodes every packet `rounds` times at `rate` (the server decodes at 16 kHz).
    func decodeWithSwift(rounds: Int, at rate: SampleRate = .hz48000) throws -> Int {
        let decoder = try OpusDecoder(format: AudioFormat(sampleRate: rate, channels: .mono))
        let out = UnsafeMutableBufferPointer<Int16>.allocate(capacity: decoder.maxSamplesPerChannel)
        defer { out.deallocate() }
        var frames = 0
        try packetBytes.withUnsafeBytes { bytes in
            for _ in 0..<rounds {
                var offset = 0
                for length in lengths {
                    _ = try decoder.decode(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + Int(length))]), into: out)
                    offset += Int(length)
                    frames += 1
                }
            }
        }
        return frames
    }

    func decodeWithC(rounds: Int, at rate: SampleRate = .hz48000) -> Int {
        packetBytes.withUnsafeBufferPointer { bytes in
            lengths.withUnsafeBufferPointer { lengths in
                parley_bench_decode(bytes.baseAddress, lengths.baseAddress, Int32(lengths.count), Int32(rounds), Int32(rate.rawValue), 1)
            }
        }
    }

    func encodeWithSwift(rounds: Int, complexity: Int) throws -> Int {
        let encoder = try OpusEncoder(format: profile.format, settings: .init(bitrate: bitrate, complexity: complexity))
        let packet = UnsafeMutableRawBufferPointer.allocate(byteCount: OpusEncoder.maxPacketBytes, alignment: 1)
        defer { packet.deallocate() }
        let frame = profile.frameSamples
        var frames = 0
        try pcm.withUnsafeBufferPointer { samples in
            for _ in 0..<rounds {
                for start in stride(from: 0, to: samples.count, by: frame) {
                    _ = try encoder.encode(UnsafeBufferPointer(rebasing: samples[start..<(start + frame)]), into: packet)
                    frames += 1
                }
            }
        }
        return frames
    }

    func encodeWithC(rounds: Int, complexity: Int) -> Int {
        pcm.withUnsafeBufferPointer { samples in
            parley_bench_encode(samples.baseAddress, Int32(frames), Int32(profile.frameSamples), Int32(rounds), Int32(profile.sampleRate), 1, Int32(bitrate), Int32(complexity))
        }
    }
}

/// Timed trials of two loops over the same work, interleaved finely: this machine's speed drifts
/// over seconds (it is a shared VM), so each pass of one loop is timed right beside a pass of the
/// other, and the order flips every pass.
enum CodecTrial {
    struct Comparison {
        let swiftFramesPerSecond: Double
        let cFramesPerSecond: Double
        /// Swift/C of each trial, lowest and highest: how much to trust the median.
        let ratioRange: ClosedRange<Double>
        var ratio: Double { swiftFramesPerSecond / cFramesPerSecond }

        func line(_ name: String) -> String {
            let perFrame = 1e6 / swiftFramesPerSecond
            return "\(name.padding(14))  Swift \(Format.grouped(Int(swiftFramesPerSecond))) frames/s (\(Format.fixed(perFrame, 1)) µs/frame)   "
                + "C \(Format.grouped(Int(cFramesPerSecond))) frames/s   Swift/C \(Format.fixed(ratio * 100, 1)) % "
                + "(trials \(Format.fixed(ratioRange.lowerBound * 100, 1))-\(Format.fixed(ratioRange.upperBound * 100, 1)) %)"
        }

        var json: JSON {
            .object([("swift_frames_per_cpu_second", .number(swiftFramesPerSecond)),
                     ("c_frames_per_cpu_second", .number(cFramesPerSecond)),
                     ("swift_over_c", .number(ratio)),
                     ("swift_over_c_lowest_trial", .number(ratioRange.lowerBound)),
                     ("swift_over_c_highest_trial", .number(ratioRange.upperBound))])
        }
    }

    /// `swift(1)` and `c(1)` each run one pass over the input and return the frames they did.
    static func compare(trials: Int, trialSeconds: Double, frames: Int,
                        swift: (Int) throws -> Int, c: (Int) -> Int) throws -> Comparison {
        _ = try swift(1)  // warm both up: page in libopus, fill the caches
        let pass = cpuSeconds { _ = c(1) }
        let passes = max(2, Int(trialSeconds / max(pass, 1e-6) / 2))
        var swiftRates: [Double] = [], cRates: [Double] = [], ratios: [Double] = []
        for _ in 0..<trials {
            var swiftTime = 0.0, cTime = 0.0, swiftFrames = 0, cFrames = 0
            for p in 0..<passes {
                if p % 2 == 0 { swiftTime += try cpuSecondsThrowing { swiftFrames += try swift(1) } }
                var n = 0
                cTime += cpuSeconds { n = c(1) }
                guard n > 0 else { throw LoadFailure("the C loop failed with libopus error \(n)") }
                cFrames += n
                if p % 2 == 1 { swiftTime += try cpuSecondsThrowing { swiftFrames += try swift(1) } }
            }
            swiftRates.append(Double(swiftFrames) / swiftTime)
            cRates.append(Double(cFrames) / cTime)
            ratios.append(swiftRates.last! / cRates.last!)
        }
        return Comparison(swiftFramesPerSecond: median(swiftRates), cFramesPerSecond: median(cRates),
                          ratioRange: ratios.min()!...ratios.max()!)
    }

    private static func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

    /// CPU time of this thread, so another process on the machine does not count against us.
    private static func threadCPU() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    private static func cpuSeconds(_ body: () -> Void) -> Double {
        let start = threadCPU()
        body()
        return threadCPU() - start
    }

    private static func cpuSecondsThrowing(_ body: () throws -> Void) throws -> Double {
        let start = threadCPU()
        try body()
        return threadCPU() - start
    }
}

private extension String {
    func padding(_ width: Int) -> String { count >= width ? self : self + String(repeating: " ", count: width - count) }
}
