import Codec
import TestSupport

/// The fixed set a recogniser's accuracy is measured on: 30 sentences of what people ask a voice
/// agent (numbers among them, written as digits and folded to words before comparing), each
/// spoken by several voices and speeds, and word error rate as the edit distance between word
/// lists over the reference's length.
enum WordErrorRate {
    static let sentences = [
        "What is the weather like in Paris today", "Hello there", "Good morning, how are you", "Please book a table for 2 at 8",
        "I need a flight to Boston on Friday", "Can you tell me a story about the sea", "Turn off the lights in the kitchen",
        "How long does it take to drive to London", "Remind me to call my mother tomorrow", "What time does the museum open",
        "Send the report to my manager before noon", "I would like to cancel my subscription", "Play some quiet music in the living room",
        "How much does a ticket to Rome cost", "Set an alarm for 7 in the morning", "Is the pharmacy on Main Street still open",
        "My account number is 4 5 6 7", "Order a large pizza with mushrooms", "What is 12 times 7", "Call a taxi to the airport please",
        "Where is the nearest train station", "Add milk and eggs to my shopping list", "How tall is the Eiffel Tower",
        "Translate thank you very much into French", "The meeting has moved to Thursday afternoon", "Can I pay with my credit card",
        "Book me a hotel room for 3 nights", "What is the capital of Australia", "Tell me a joke about cats", "Read my new messages out loud",
    ]

    /// Who says a sentence: espeak-ng at a speed, flite, or Piper's joe at a length scale.
    enum Voice: CustomStringConvertible, Sendable {
        case espeak(String, wordsPerMinute: Int)
        case flite(String)
        case piper(lengthScale: Double)

        /// Every voice the benchmark reads (`make bench-wer`); `make test` reads `quick`.
        static let all: [Voice] = [.espeak("en-us", wordsPerMinute: 175), .espeak("en-us", wordsPerMinute: 140),
                                   .espeak("en-gb+f3", wordsPerMinute: 160), .flite("slt"), .flite("rms"),
                                   .piper(lengthScale: 1.0), .piper(lengthScale: 1.25)]
        static let quick: [Voice] = [.espeak("en-us", wordsPerMinute: 175), .flite("slt"), .piper(lengthScale: 1.0)]

        var description: String {
            switch self {
            case .espeak(let name, let wpm): "espeak-ng \(name) \(wpm) wpm"
            case .flite(let name): "flite \(name)"
            case .piper(let scale): "piper joe ×\(scale)"
            }
        }

        /// The sentence as pcm16 at `rate` (by default 24 kHz, the Realtime API's input).
        func say(_ sentence: String, rate: Int = 24_000) throws -> [Int16] {
            let path = switch self {
            case .espeak(let name, let wpm): try SpeechVectors.wav(sentence, voice: name, wordsPerMinute: wpm)
            case .flite(let name): try SpeechVectors.flite(sentence, voice: name)
            case .piper(let scale): try SpeechVectors.piper(sentence, lengthScale: scale)
            }
            let wav = try WAVFile.read(path: path)
            return try Resampler(from: wav.sampleRate, to: rate).process(wav.samples)
        }
    }

    /// Lowercase words, punctuation dropped, hyphens split, numbers written out ("42" is "forty
    /// two"), so "table 42" and "table for two" differ by what was heard, not by how it was written.
    static func words(_ text: String) -> [String] {
        text.lowercased().split { !$0.isLetter && !$0.isNumber && $0 != "'" }.flatMap { word -> [String] in
            guard let n = Int(word) else { return [String(word)] }
            return spelled(n).split(separator: " ").map(String.init)
        }
    }

    private static let ones = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
                               "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
    private static let tens = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]

    /// 0 to 9,999 in words (what these sentences and their misreadings hold); larger stay digits.
    static func spelled(_ n: Int) -> String {
        switch n {
        case ..<20: ones[n]
        case ..<100: tens[n / 10] + (n % 10 == 0 ? "" : " " + ones[n % 10])
        case ..<1000: ones[n / 100] + " hundred" + (n % 100 == 0 ? "" : " " + spelled(n % 100))
        case ..<10_000: spelled(n / 1000) + " thousand" + (n % 1000 == 0 ? "" : " " + spelled(n % 1000))
        default: String(n)
        }
    }

    /// The edit distance between the word lists: substitutions, insertions and deletions.
    static func errors(_ reference: [String], _ heard: [String]) -> Int {
        var previous = Array(0...heard.count)
        for (i, word) in reference.enumerated() {
            var row = [i + 1] + Array(repeating: 0, count: heard.count)
            for (j, other) in heard.enumerated() {
                row[j + 1] = min(previous[j] + (word == other ? 0 : 1), previous[j + 1] + 1, row[j] + 1)
            }
            previous = row
        }
        return previous[heard.count]
    }
}
