import Codec
import Loop
#if canImport(Glibc)
import Glibc
#endif

/// One call's recording on disk: stereo Opus in Ogg, `<session id>.opus` in the recordings
/// directory (`-2`, `-3`… when the session is recorded again, after a resume). Made on a loop,
/// used only on the recording thread (`Recordings`), which is what makes it safe to share.
final class RecordingFile: @unchecked Sendable {
    let directory: String
    let sessionID: String
    let rate: Int
    private(set) var path: String?
    private var fd: Int32 = -1
    private var encoder: OpusEncoder?
    private var ogg: OggOpusWriter?
    private var failed = false

    /// 32 kb/s for both voices: speech at 16 kHz is clear at 16 kb/s a channel; complexity 5
    /// costs about half the CPU of libopus's default 10 for a difference no one hears in speech.
    static let settings = OpusEncoder.Settings(bitrate: 32_000, complexity: 5)

    /// The file of a session's `take`th recording (1: its first; later ones after a resume).
    static func name(of sessionID: String, take: Int = 1) -> String {
        take == 1 ? "\(sessionID).opus" : "\(sessionID)-\(take).opus"
    }

    init(directory: String, sessionID: String, rate: Int) {
        self.directory = directory
        self.sessionID = sessionID
        self.rate = rate
    }

    /// A file whose close found the recording thread's queue full ends here, when the last job
    /// that held it lets it go: its last page, and the descriptor back.
    deinit { _ = close() }

    /// Encodes whole 20 ms frames of interleaved stereo and writes the pages they complete; the
    /// bytes written, or -1 if the recording failed (it is then left as it is).
    func append(_ stereo: [Int16]) -> Int {
        guard !failed else { return 0 }
        do throws(RecordingError) {
            var bytes = try open()
            guard let encoder else { return 0 }
            let frame = rate / 50 * 2
            let samples48k = 960
            var start = 0
            while start + frame <= stereo.count {
                let packet: [UInt8]
                do { packet = try encoder.encode(Array(stereo[start..<start + frame])) } catch { throw .encode("\(error)") }
                bytes += ogg?.append(packet, samples48k: samples48k) ?? []
                start += frame
            }
            try write(bytes)
            return bytes.count
        } catch {
            fail(error)
            return -1
        }
    }

    /// The last page, flagged end of stream, and the descriptor closed.
    func close() -> Int {
        defer {
            if fd >= 0 { Sys.close(fd) }
            fd = -1
        }
        guard !failed, fd >= 0, var ogg else { return 0 }
        let last = ogg.finish()
        self.ogg = ogg
        do throws(RecordingError) {
            try write(last)
            return last.count
        } catch {
            fail(error)
            return -1
        }
    }

    /// The file and its headers, with the first block.
    private func open() throws(RecordingError) -> [UInt8] {
        guard fd < 0 else { return [] }
        let made: OpusEncoder
        do {
            guard let sampleRate = SampleRate(rawValue: rate) else { throw RecordingError.encode("\(rate) Hz is not an Opus rate") }
            made = try OpusEncoder(format: AudioFormat(sampleRate: sampleRate, channels: .stereo), application: .voip, settings: Self.settings)
        } catch let error as RecordingError { throw error } catch { throw .encode("\(error)") }
        for n in 1...9 {
            let candidate = "\(directory)/\(Self.name(of: sessionID, take: n))"
            do {
                fd = try Sys.createNew(candidate, mode: 0o640)
                path = candidate
                break
            } catch where error.errno == EEXIST {
                continue
            } catch {
                throw .file("\(error)")
            }
        }
        guard fd >= 0 else { throw .file("\(directory)/\(sessionID).opus and -2 … -9 exist") }
        encoder = made
        // The pre-skip is counted at 48 kHz whatever the input rate (RFC 7845 section 4.2).
        var writer = OggOpusWriter(channels: 2, preSkip: made.lookahead * 48_000 / rate, serial: UInt32.random(in: 1...UInt32.max))
        let headers = writer.headers(inputRate: rate)
        ogg = writer
        return headers
    }

    private func write(_ bytes: [UInt8]) throws(RecordingError) {
        guard !bytes.isEmpty else { return }
        do { try Sys.writeWhole(fd, bytes) } catch { throw .file("\(path ?? directory): \(error)") }
    }

    private func fail(_ error: RecordingError) {
        failed = true
        sessionLog.warning("recording failed", metadata: ["session": "\(sessionID)", "error": "\(error)"])
    }
}

enum RecordingError: Error, CustomStringConvertible {
    case file(String)
    case encode(String)

    var description: String {
        switch self {
        case .file(let why): "cannot write the recording: \(why)"
        case .encode(let why): "cannot encode the recording: \(why)"
        }
    }
}
