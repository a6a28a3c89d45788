import Codec
import Glibc
import Testing
import TestSupport

/// A noisy phone line is denoised, a quiet one is not (`--phone-line-denoise auto`, the default;
/// `LineNoiseFloor`): a real `parley serve` on the test's clock, called over SIP by `TestPhone`,
/// whose caller asks a question over pink noise at 10 dB under the speech, or over a quiet room
/// (-51 dBFS, sox's `vol 0.01`). Either way the question is a turn the agent answers; only the
/// noisy line is counted in `parley_phone_lines_denoised_total`.
@Suite(.serialized) struct SIPNoisyLineTests {
    @Test(arguments: [(10.0, "en-us", 150), (nil, "en-gb+f3", 175), (10.0, "en-us+m3", 130)] as [(Double?, String, Int)])
    func aNoisyLineIsDenoisedAndAQuietOneIsNot(snrDB: Double?, voice: String, wordsPerMinute: Int) throws {
        let sip = try RedisServer.freePort()
        let server = try ServerProcess(arguments: "--sip-port \(sip) --sip-host 127.0.0.1 --sip-allow 127.0.0.1/32", clocked: true)
        let clock = try #require(server.clock)
        let phone = try TestPhone(sipPort: sip)
        try phone.call(clock)

        let wav = try WAVFile.read(path: try SpeechVectors.wav("How many words are in this sentence?", voice: voice, wordsPerMinute: wordsPerMinute))
        let question = try Resampler(from: wav.sampleRate, to: 8_000).process(wav.samples)
        let loud = question.filter { abs($0) > 300 }.map { Double($0) * Double($0) }
        let speechRMS = (loud.reduce(0, +) / Double(max(1, loud.count))).squareRoot()
        let noise = try WAVFile.read(path: try SpeechVectors.pinkNoise(seconds: 40, rate: 8_000, volume: snrDB == nil ? 0.01 : 0.05)).samples
        let noiseRMS = (noise.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(noise.count)).squareRoot()
        let gain = snrDB.map { speechRMS / pow(10, $0 / 20) / noiseRMS } ?? 1
        // Four seconds of the line, the question, then the line until the answer has played.
        let start = 4 * 8_000
        var replyFrames = 0, lastReply = 0
        var tick = 1
        while tick < 1_500 {
            if TestPhone.rms(phone.nextFrame()) > 300 {
                replyFrames += 1
                lastReply = tick
            }
            let microphone = (0..<160).map { i -> Int16 in
                let t = (tick - 1) * 160 + i
                let said = t >= start && t - start < question.count ? Double(question[t - start]) : 0
                return Int16(clamping: Int(said + Double(noise[t % noise.count]) * gain))
            }
            try phone.send(microphone)
            #expect(clock.advance(milliseconds: 20), "the server did not settle at tick \(tick)")
            if replyFrames > 0, tick - lastReply > 100 { break }
            tick += 1
        }
        try phone.hangUp()
        let denoised = server.metric("parley_phone_lines_denoised_total") ?? -1
        let label = "\(snrDB.map { "pink noise at \(Int($0)) dB SNR" } ?? "a quiet room"), \(voice) at \(wordsPerMinute) wpm"
        print("SIP \(label): \(Int(denoised)) denoised, \(replyFrames * 20) ms of answer")
        #expect(denoised == (snrDB == nil ? 0 : 1), "\(label): parley_phone_lines_denoised_total \(denoised)")
        #expect(replyFrames * 20 >= 500, "\(label): the question was not answered (\(replyFrames * 20) ms of reply)")
    }
}
