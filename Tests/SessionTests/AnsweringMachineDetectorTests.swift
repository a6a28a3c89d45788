import Codec
import Glibc
import Testing
import TestSupport
@testable import SessionEngine

/// Who answered a placed call (`AnsweringMachineDetector`), on synthetic calls as the server hears
/// them: G.711 at 8 kHz, a quiet line (-66 dBFS) for 300 ms, then the callee: people answering in
/// four voices and speeds, voicemail greetings of three lengths with and without a beep, a short
/// one whose beep decides it, an IVR menu, and silence.
@Suite struct AnsweringMachineDetectorTests {
    static let voices = [("en-us", 150), ("en-gb+f3", 175), ("en-us+m3", 125), ("en-gb-x-rp", 160)]
    static let people = ["Hello?", "Hello, who is this?", "Yes?", "Hi, this is Sam."]
    static let greetings = ["Hi, you've reached the voicemail of Jane Smith. I can't take your call right now, please leave a message after the tone.",
                            "You have reached four one five, five five five, zero one two three. Please leave a message.",
                            "The person you are calling is not available. At the tone, please record your message."]
    static let ivr = "Thank you for calling Acme Bank. For account balances, press one. For a representative, press zero."

    static func said(_ text: String, _ voice: (String, Int)) throws -> [Int16] {
        let wav = try WAVFile.read(path: try SpeechVectors.wav(text, voice: voice.0, wordsPerMinute: voice.1))
        return try Resampler(from: wav.sampleRate, to: 8_000).process(wav.samples)
    }

    static func beep(_ hz: Double = 1_000, ms: Int = 500) -> [Int16] {
        (0..<(8 * ms)).map { Int16(9_000 * sin(2 * Double.pi * hz * Double($0) / 8_000)) }
    }

    /// The line: faint noise, then `audio`, then `tail` ms of the line alone, through µ-law.
    static func line(_ audio: [Int16], tail: Int = 3_000) -> [Int16] {
        var seed: UInt32 = 7
        func hiss() -> Int16 { seed = seed &* 1_664_525 &+ 1_013_904_223; return Int16(Int(seed >> 16) % 33) - 16 }
        let call = (0..<2_400).map { _ in hiss() } + audio + (0..<(8 * tail)).map { _ in hiss() }
        return G711.decode(G711.encode(call, .muLaw), .muLaw)
    }

    static func verdict(_ call: [Int16]) -> AnsweringMachineDetector.Verdict? {
        var detector = AnsweringMachineDetector()
        for start in stride(from: 0, to: call.count - 160, by: 160) {
            if let verdict = detector.heard(Array(call[start..<(start + 160)])) { return verdict }
        }
        return nil
    }

    /// Decided by 2.6 s of the line (300 ms of it before the callee's first sound).
    static let decidedByMs = 2_600

    @Test func peopleAnsweringAreHumanWithinTwoAndAHalfSecondsOfTheirFirstWord() throws {
        for voice in Self.voices {
            for text in Self.people {
                let verdict = Self.verdict(Self.line(try Self.said(text, voice)))
                #expect(verdict?.answer == .human && (verdict?.afterMs ?? .max) <= Self.decidedByMs, "\(text) in \(voice): \(String(describing: verdict))")
            }
        }
    }

    @Test func voicemailGreetingsAndAnIVRAreMachinesAsSoonAsTheyTalkOn() throws {
        for voice in Self.voices {
            for text in Self.greetings {
                for withBeep in [false, true] {
                    let verdict = Self.verdict(Self.line(try Self.said(text, voice) + (withBeep ? Self.beep() : [])))
                    #expect(verdict?.answer == .machine && (verdict?.afterMs ?? .max) <= Self.decidedByMs, "\(text) in \(voice), beep \(withBeep): \(String(describing: verdict))")
                }
            }
            let menu = Self.verdict(Self.line(try Self.said(Self.ivr, voice)))
            #expect(menu?.answer == .machine && (menu?.afterMs ?? .max) <= Self.decidedByMs + 500, "the IVR in \(voice): \(String(describing: menu))")
        }
    }

    @Test func aShortGreetingsBeepDecidesItAndSilenceIsUnknown() throws {
        for hz in [440.0, 1_000, 1_400] {
            // "Leave a message." then the beep at once: too short a greeting to tell by its length.
            let verdict = Self.verdict(Self.line(try Self.said("Leave a message.", Self.voices[0]) + Self.beep(hz)))
            #expect(verdict?.answer == .machine && verdict?.reason == "beep", "\(hz) Hz: \(String(describing: verdict))")
        }
        let silent = Self.verdict(Self.line([], tail: 5_000))
        #expect(silent == .init(answer: .unknown, reason: "silence", afterMs: AnsweringMachineDetector.silenceMs))
    }
}
