import Models
import SpeechContracts

/// When user speech during a spoken reply is a barge-in and when it is only a backchannel
/// ("uh-huh", "okay") or a noise: a pure value, fed the speech's start, how long it has lasted on
/// the audio clock, the recogniser's words and its end; it answers pause, resume or barge in. The
/// engine holds one while a reply is paused and carries out what it decides.
///
/// The rule follows LiveKit Agents (`min_interruption_duration` 0.5 s, `min_interruption_words`,
/// resuming after a false interruption) and Pipecat's minimum-words interruption strategy: speech
/// first pauses the reply; it becomes a barge-in once the recogniser hears a word that asks for
/// the floor ("wait", "stop", "no", "actually", "but": `interruptionWords`), once it has heard
/// `minWords` words that are not backchannels, or once it has lasted `minDurationMs`. A recognised
/// backchannel vetoes the duration rule (a long "mm-hmm" is still a backchannel); a speech that
/// ends before any rule fires resumes the reply where it paused.
///
/// Backchannels are short, and a recogniser hears them badly: Whisper tiny.en wrote "mm hmm" as
/// other words ("I'm home", "Mm-hmm" as "Hmm, hmm" or "Mmm."), which counted as real ones and cut
/// the reply every time (the trials). So one or two stray words never cut (`minWords` is 3
/// by default; a word that asks for the floor still cuts alone), and with a recogniser the
/// duration rule waits three times `minDurationMs` (1.5 s, longer than any backchannel in the test
/// voices, 0.3 to 1.2 s) whatever the words so far; a speech that ends is decided by its words when
/// they come (a short "stop" ends before any decode of it is back), within 1.5 s
/// (`TurnTaking.pauseWordsWaitMs`). The reply stays
/// paused meanwhile, so the user is not talked over: what they hear stop is the pause, at the
/// speech's onset.
///
/// Whisper also writes a hum as ordinary words ("And then them.", "No, no." for "uh huh"), which
/// no list of backchannels can know. Its own confidence in the decode tells most of them apart
/// (`weighed`): unsure words count as none, so the speech is decided by its duration, as a noise is.
public struct ReplyInterruption: Sendable, Equatable {
    /// The session's settings (a Parley extension under `turn_detection`: `interruption`).
    public struct Settings: Sendable, Equatable {
        /// Speech (from its onset to its last loud frame) this long is a barge-in. 0: every start
        /// is one at once (Parley's behaviour before pausing existed).
        public var minDurationMs = 500
        /// This many recognised words that are not backchannels are a barge-in, however short the
        /// speech (a word in `interruptionWords` is one alone). 0: words never decide (only the
        /// duration does).
        public var minWords = 3

        public init(minDurationMs: Int = 500, minWords: Int = 3) {
            self.minDurationMs = minDurationMs
            self.minWords = minWords
        }

        package static let minDurationRange = 0...10_000
        package static let minWordsRange = 0...20

        /// Whether a client changed them (`session.updated` reports the extension only then, so
        /// clients that do not know it never see it).
        package var isDefault: Bool { self == Settings() }
    }

    /// What the reply should do.
    public enum Decision: Sendable, Equatable {
        /// Stop sending the reply's audio; keep the response alive.
        case pause
        /// Send the rest of the reply from where it paused; nothing is cancelled.
        case resume(Resumption)
        /// Cancel the response and truncate the assistant item at what was heard.
        case bargeIn
    }

    /// Why a paused reply resumed.
    public enum Resumption: Sendable, Equatable {
        /// The words heard were all backchannels.
        case backchannel
        /// The speech ended before either rule fired, with no words recognised: short or noise.
        case short
    }

    /// What is being answered when the speech starts.
    public enum Reply: Sendable, Equatable {
        case none
        /// A text reply: nothing plays, so there is nothing to pause; speech barges in at once.
        case text
        case spoken
    }

    public let settings: Settings
    /// Whether a recogniser follows the speech, so words may yet decide it.
    public let expectsWords: Bool
    /// What the recogniser answers when the speech goes quiet, which a paused reply waits for
    /// once the speech has ended (`TurnTaking.pauseWordsWaitMs`). A whole decode (Whisper) is
    /// weighed by the rules above; a streaming recogniser's words (pocketsphinx) are its guess,
    /// often another word ("stop" heard as "ta", "doc" or "i"), so any word of it counts as one
    /// that asks for the floor, as before Parley weighed words.
    public let settledWords: SettledWords
    /// The speech comes over a phone line (8 kHz): a word that asks for the floor counts however
    /// unsure the decode (`weighed`).
    public let narrowband: Bool
    /// The session's language: its backchannels and words that ask for the floor are read in it
    /// (`TurnLexicon`), English's where it has none.
    let language: String?
    /// Words recognised so far: real ones, and backchannels; and whether one asks for the floor.
    public private(set) var words = 0
    public private(set) var backchannels = 0
    public private(set) var asksForTheFloor = false

    private init(settings: Settings, expectsWords: Bool, settledWords: SettledWords, narrowband: Bool, language: String?) {
        self.settledWords = settledWords
        self.language = language
        self.narrowband = narrowband
        self.settings = settings
        self.expectsWords = expectsWords
    }

    /// Speech started while `reply` was in progress. Returns the machine that now holds the pause
    /// (nil unless the decision is `.pause`) and the decision (nil: nothing to do).
    /// `interruptResponse` false means the reply is never interrupted, and so never paused.
    public static func speechStarted(during reply: Reply, interruptResponse: Bool, settings: Settings,
                                     expectsWords: Bool = false, settledWords: SettledWords = .decode, narrowband: Bool = false,
                                     language: String? = nil) -> (ReplyInterruption?, Decision?) {
        guard interruptResponse else { return (nil, nil) }
        switch reply {
        case .none: return (nil, nil)
        case .text: return (nil, .bargeIn)
        case .spoken:
            if settings.minDurationMs == 0 { return (nil, .bargeIn) }
            return (ReplyInterruption(settings: settings, expectsWords: expectsWords, settledWords: settledWords, narrowband: narrowband,
                                      language: language), .pause)
        }
    }

    /// Whether the speech, once ended, waits for the words its quiet brings before the reply resumes.
    package var awaitsSettledWords: Bool { expectsWords && settledWords != .none && settings.minWords > 0 }

    /// The speech has lasted `speechMs` (onset to its last loud frame; trailing quiet does not count).
    public func heard(speechMs: Int) -> Decision? {
        guard speechMs >= settings.minDurationMs else { return nil }
        // Words heard and every one a backchannel: a long "mm-hmm" is still one.
        if backchannels > 0 && words == 0 { return nil }
        // Words may still come, or be misheard: the duration alone decides at three times its
        // length (flite's slt says "mm hmm" for 1.2 s).
        if expectsWords && settings.minWords > 0 && speechMs < 3 * settings.minDurationMs { return nil }
        return .bargeIn
    }

    /// The recogniser's hypothesis of the whole speech so far (partial or final), with its
    /// confidence in it where it gives one: words it was unsure of count as none (`weighed`).
    public mutating func recognised(_ text: String, confidence: DecodeConfidence? = nil) -> Decision? {
        (words, backchannels, asksForTheFloor) = Self.weighed(Self.count(text, lexicon: TurnLexicon.of(language)), confidence, narrowband: narrowband)
        guard settings.minWords > 0, asksForTheFloor || words >= (settledWords == .decode ? settings.minWords : 1) else { return nil }
        return .bargeIn
    }

    /// The detector heard the speech end before it was confirmed: the reply resumes.
    public func speechStopped() -> Decision {
        .resume(backchannels > 0 && words == 0 ? .backchannel : .short)
    }

    // MARK: The decode's confidence

    /// Ordinary words count toward `minWords` only from a decode at least this sure (Whisper's
    /// average log-probability). Whisper tiny.en writes a hum as ordinary words ("And then
    /// them.", "That's my idea.", "and nature and"), each of which cut the reply as three words;
    /// over 240 backchannels and 192 interruptions in 8 voices at 3 speeds (docs/benchmarks.md,
    /// "Backchannels and the decode's confidence") those decodes scored -0.5 to -0.98 and the real
    /// sentences of three words or more without a word asking for the floor -0.04 to -0.54.
    package static let sureWordsLogProbability = -0.6
    /// A word that asks for the floor counts unless the decode is unsure on both measures: "uh
    /// huh" heard as "No, no." scored -0.83 to -0.98 with a no-speech probability of 0.44 (a
    /// partial of it) to 0.59; a real "stop" can score as low as -0.91 (flite's rms), but then with
    /// speech plainly there (0.11 to 0.28 for every real interruption under -0.75), and a real
    /// "no no no" reached 0.53 only at -0.61.
    package static let unsureFloorLogProbability = -0.75
    package static let unsureFloorNoSpeech = 0.35
    /// Not on a phone line: through G.711 a real floor word comes with Whisper less sure of it
    /// and more sure there is no speech (`make bench-backchannels` with `--line g711`: the rule
    /// took the interruptions missed from 18 to 26 of 192 for 2 backchannels fewer cut, 12 to 10
    /// of 240), so there a floor word counts whatever the decode's confidence.

    /// What the counts of `text` are worth given the decode's confidence.
    package static func weighed(_ counted: (words: Int, backchannels: Int, asksForTheFloor: Bool), _ confidence: DecodeConfidence?,
                                narrowband: Bool = false) -> (words: Int, backchannels: Int, asksForTheFloor: Bool) {
        guard let confidence else { return counted }
        var weighed = counted
        if confidence.averageLogProbability < sureWordsLogProbability { weighed.words = 0 }
        if !narrowband, confidence.averageLogProbability < unsureFloorLogProbability && confidence.noSpeechProbability >= unsureFloorNoSpeech {
            weighed.asksForTheFloor = false
        }
        return weighed
    }

    // MARK: Backchannels

    /// What listeners say to show they are listening, not to take the turn (LiveKit's and Pipecat's
    /// lists are of the same kind), lower case, hyphens read as spaces. Two-word ones first.
    package static let backchannelPhrases: Set<String> = [
        "uh huh", "mm hmm", "mm hm", "i see", "got it", "all right", "go on", "that's right", "makes sense",
    ]
    package static let backchannelWords: Set<String> = [
        "uh", "um", "uhm", "hm", "hmm", "mm", "mmm", "mhm", "huh", "ah", "oh", "okay", "ok", "yeah", "yea", "yes", "yep", "yup",
        "right", "sure", "alright", "cool", "nice", "great", "true", "exactly", "indeed", "wow", "really",
        // How recognisers spell "uh-huh" and "mm-hmm" when their dictionaries lack them
        // (pocketsphinx hears espeak-ng's "uh huh" as "aha").
        "aha", "uhhuh", "mhmm", "mmhmm", "ahh", "ohh",
    ]

    /// Words that ask for the floor: said over a reply, each is an interruption on its own, even
    /// after a backchannel ("okay, but wait"). Lower case.
    package static let interruptionWords: Set<String> = [
        "wait", "stop", "no", "nope", "actually", "but", "hold", "hang", "sorry", "excuse", "pardon", "what", "quiet",
        "enough", "cancel", "instead", "hey",
    ]

    /// Letters with no vowel: how Whisper spells a hum it has no word for ("MMH", "MCHM", the
    /// "M-M-H-M" it wrote for flite's "mm hmm"). Never a word that asks for anything.
    /// Accented vowels are vowels: Italian's "è" is a word, not a hum.
    package static func isHum(_ token: Substring) -> Bool {
        token.allSatisfy(\.isLetter) && !token.contains { "aeiouyàáâäãåèéêëìíîïòóôöõùúûüœæ".contains($0) }
    }

    /// Words that are not backchannels, backchannel phrases, and whether a word asks for the floor, in `text`.
    /// `lexicon`: the session's language's lists (Spanish, German, French, Italian); nil: English's.
    package static func count(_ text: String, lexicon: TurnLexicon? = nil) -> (words: Int, backchannels: Int, asksForTheFloor: Bool) {
        let backchannelWords = lexicon?.backchannelWords ?? backchannelWords
        let backchannelPhrases = lexicon?.backchannelPhrases ?? backchannelPhrases
        let interruptionWords = lexicon?.interruptionWords ?? interruptionWords
        var tokens: [Substring] = []
        var normalized = ""
        for c in text.lowercased() {
            if c.isLetter || c.isNumber || c == "'" { normalized.append(c) } else { normalized.append(" ") }
        }
        tokens = normalized.split(separator: " ")
        var words = 0
        var backchannels = 0
        let asks = tokens.contains { interruptionWords.contains(String($0)) }
        var i = 0
        while i < tokens.count {
            if i + 1 < tokens.count, backchannelPhrases.contains("\(tokens[i]) \(tokens[i + 1])") {
                backchannels += 1
                i += 2
                continue
            }
            if backchannelWords.contains(String(tokens[i])) || isHum(tokens[i]) { backchannels += 1 } else { words += 1 }
            i += 1
        }
        return (words, backchannels, asks)
    }
}
