import ArgumentParser
import Codec
import Loop
import Session
#if canImport(Glibc)
import Glibc
#endif

/// `parley-load echo-guard`: what the echo guard costs a session per 20 ms input frame while a
/// reply plays, and what it takes out of the echo: a reply (the input speech) leaks into the
/// microphone `--delay-ms` late at `--leak-db`, and the guard hears it as the driver feeds it
/// (reference pieces as they are sent, microphone frames as they arrive, on a simulated clock so
/// nothing waits). Measured with the canceller and the gate, the gate alone, and between replies.
struct EchoGuardCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "echo-guard",
        abstract: "Measure the echo guard (libspeexdsp's canceller and the level gate) per 20 ms frame, and the echo it removes.",
        discussion: """
            The input speech (a WAV file, e.g. from `espeak-ng -w speech.wav "..."`) is resampled to \
            16 kHz and 8 kHz (the engine's rates) and looped as the reply. Times are the thread's CPU \
            time, so the figures are per core.
            """)

    @Option(help: "Speech to use as the reply, as a 16-bit PCM WAV file.")
    var input: String

    @Option(help: "Seconds of reply to run through each guard.")
    var seconds = 30

    @Option(help: "The echo's level against the reply, in dB.")
    var leakDB = -10.0

    @Option(help: "The echo's delay (loudspeaker to microphone, and the network), in ms.")
    var delayMs = 150

    func validate() throws {
        guard (2...600).contains(seconds) else { throw ValidationError("--seconds 2...600") }
        guard leakDB <= 0, (0...280).contains(delayMs) else { throw ValidationError("--leak-db at most 0, --delay-ms 0...280 (the canceller's tail is 300 ms)") }
    }

    func run() throws {
        let wav = try WAVFile.read(path: input)
        print("parley-load echo-guard: \(seconds) s of reply, echo at \(leakDB) dB, \(delayMs) ms late")
        for rate in [16_000, 8_000] {
            let one = try Resampler(from: wav.sampleRate, to: rate).process(wav.samples)
            var reply: [Int16] = []
            while reply.count < rate * seconds { reply += one }
            reply = Array(reply.prefix(rate * seconds))
            for (name, cancels, plays) in [("canceller + gate", true, true), ("gate alone", false, true), ("between replies", true, false)] {
                let result = measure(reply: reply, rate: rate, cancels: cancels, plays: plays)
                let state = result.stateBytes > 0 ? "  state \(result.stateBytes / 1024) KiB" : ""
                let padded = name + String(repeating: " ", count: max(0, 17 - name.count))
                let echo = plays ? "  echo attenuated \(Format.fixed(result.attenuationDB, 1)) dB (last half), \(result.heldPercent) % of frames held" : ""
                print("\(rate / 1000) kHz \(padded) \(Format.fixed(result.microseconds, 2)) µs per 20 ms frame\(echo)\(state)")
            }
        }
    }

    struct Result {
        var microseconds: Double
        var attenuationDB: Double
        var heldPercent: Int
        var stateBytes: Int
    }

    /// Feeds `reply` through a guard as a session would: each 20 ms piece sent 200 ms before it
    /// plays, each 20 ms microphone frame (the echo over a quiet room) arriving 20 ms after it began.
    func measure(reply: [Int16], rate: Int, cancels: Bool, plays: Bool) -> Result {
        let frame = rate / 50
        let frameNanoseconds: UInt64 = 20_000_000
        let start: UInt64 = 1_000_000_000_000
        let guardian = EchoGuard(sampleRate: rate, now: start, cancels: cancels)
        let gain = pow(10, leakDB / 20)
        let delay = rate / 1000 * delayMs
        var random = UInt64(12345)
        var inputPower = 0.0, outputPower = 0.0
        var cpu = 0.0
        var held = 0, frames = 0
        var output: [Int16] = []
        output.reserveCapacity(reply.count + frame)
        let count = reply.count / frame
        // Between replies the guard has heard one piece long ago, so it exists (as in a session).
        if !plays { guardian.reply([Int16](repeating: 0, count: frame), playsAt: start) }
        for k in 0..<count {
            let now = start + UInt64(k) * frameNanoseconds
            var mic = [Int16](repeating: 0, count: frame)
            for i in 0..<frame {
                let t = k * frame + i
                random = random &* 6364136223846793005 &+ 1442695040888963407
                let room = Double(Int64(bitPattern: random) >> 52) / 4 // about -60 dBFS
                let echo = plays && t >= delay ? Double(reply[t - delay]) * gain : 0
                mic[i] = Int16(clamping: Int(echo + room))
            }
            let clock = ThreadCPUClock()
            // The piece 200 ms ahead goes out now (the pace's lead); then the frame captured over the last 20 ms arrives.
            if plays, (k + 10) * frame + frame <= reply.count {
                guardian.reply(Array(reply[((k + 10) * frame)..<((k + 11) * frame)]), playsAt: now + 10 * frameNanoseconds)
            }
            let out = guardian.process(mic, arrived: now + frameNanoseconds, duration: frameNanoseconds)
            cpu += clock.elapsed
            let counts = guardian.takeCounts()
            held += counts.held
            frames += 2
            output += out
            if k >= count / 2 {
                for s in mic { inputPower += Double(s) * Double(s) }
            }
        }
        let half = count / 2 * frame
        for s in output.dropFirst(half).prefix(output.count - half) { outputPower += Double(s) * Double(s) }
        let attenuation = outputPower > 0 && inputPower > 0 ? 10 * log10(inputPower / outputPower) : 0
        return Result(microseconds: cpu / Double(count) * 1e6, attenuationDB: attenuation, heldPercent: frames > 0 ? held * 100 / frames : 0,
                      stateBytes: guardian.stateBytes)
    }
}
