/// What the words of a turn so far say about its end, as a pure rule on the recogniser's text:
/// the text signal `TurnEnding` weighs beside the audio model's verdict. Smart Turn hears
/// prosody, and in a pause after "I need a flight to" it hears a speaker who has stopped (4 of 8
/// such pauses answered in the trials); the words say plainly that the thought is not over.
///
/// Rules, not a language model: measured on a labelled set of finished and cut transcripts
/// (docs/benchmarks.md, "The words of a turn"), the trailing word carries most of what a small
/// model's end-of-turn probability does, at no cost and with no model to load. The lists are the
/// closed classes of English that cannot end a finished sentence (articles, prepositions,
/// conjunctions, determiners, auxiliaries, subject pronouns) and the fillers that hold a turn.
public enum TurnWords {
    public enum Judgement: String, Sendable, Equatable, CaseIterable {
        /// The words could end a thought: a content word last.
        case finished
        /// The words could end a thought, and they are a question in form as well as heard as
        /// one: the recogniser's question mark, and a clause opened as English opens a question
        /// (a wh-word, or the auxiliary put first). A question hands the floor over more plainly
        /// than any other sentence, so `TurnEnding` waits less for it (`Settings.askedWaitMs`).
        /// Whisper puts a question mark after fragments too ("I was wondering if you could?",
        /// "can you tell me?"): the form rules out the first, the pairs below the second.
        case asked
        /// The words cannot end one: a function word, a filler, or a comma or dash last.
        case unfinished
        /// Digits, letters or items being read out ("my number is four five", "the code is A B",
        /// "milk, eggs"): a pause between groups is usual, so the end waits past one, whatever
        /// the audio says (and a wrong guess costs that wait, not the longest).
        case spellingOut = "spelling_out"
    }

    /// nil: no words (nothing to judge by; the audio alone decides).
    ///
    /// A wrong "unfinished" costs a finished turn the eagerness's longest wait, a wrong "finished"
    /// only a reply in a pause the audio model also took for the end: so the lists hold only what
    /// almost never ends an English sentence, and anything else is finished.
    /// `language`: the session's (ISO-639-1); these rules are English's, and another language is
    /// judged by its `TurnLexicon` or, without one, not at all (nil: the audio alone decides).
    public static func judge(_ text: String, language: String? = nil) -> Judgement? {
        if let language, language != "en" { return TurnLexicon.of(language)?.judge(text) }
        guard let (raw, stripped) = closed(text) else { return .unfinished }
        let tokens = words(stripped)
        guard let last = tokens.last else { return nil }
        // A question, in form and heard as one, may end in a stranded preposition or auxiliary
        // ("what are you looking for?", "could you tell me what twelve times seven is?"); a
        // fragment Whisper marked as a question may not ("I was wondering if you could?").
        let question = raw.hasSuffix("?") && isInterrogative(stripped)
        let finished: Judgement = question ? .asked : .finished
        let pair = tokens.count >= 2 ? "\(tokens[tokens.count - 2]) \(last)" : ""
        if finishedPairs.contains(pair) { return finished }
        if unfinishedPairs.contains(pair) { return .unfinished }
        if tokens.count == 2, auxiliaries.contains(tokens[0]), pronouns.contains(last) { return .unfinished }
        if neverLast.contains(last) { return .unfinished }
        if !question, unfinishedEnds.contains(last) { return .unfinished }
        // "I would like to order", "I need to book": a verb that takes an object, after "to".
        if !question, tokens.count >= 3, tokens[tokens.count - 2] == "to", objectVerbs.contains(last) { return .unfinished }
        // "I need to", not "I will" or "yes, it is".
        if !question, auxiliaries.contains(last), tokens.count > 2, !["yes", "no", "yeah", "nope", "yep", "not"].contains(tokens[0]) { return .unfinished }
        // A number written whole ("7:30", "555-123-4567", "forty-two") is said whole; a pair
        // of digits with a dash is not ("My account number is four five" written "…is 4-5.").
        if let chunk = stripped.split(separator: " ").last, isWrittenWhole(String(chunk)) { return finished }
        let run = tokens.reversed().prefix { isCode($0) || $0.count == 1 }
        let asksForDigits = tokens.dropLast().contains(where: digitCues.contains)
        if run.count >= 2, run.count < tokens.count, run.contains(where: isCode) || asksForDigits { return .spellingOut }
        if isCode(last), last.filter(\.isNumber).count < 5, asksForDigits { return .spellingOut }
        // Letters Whisper wrote as one word after a cue ("The code is AB", said "A B").
        if asksForDigits, let chunk = stripped.split(separator: " ").last, (2...4).contains(chunk.count), chunk.allSatisfy(\.isUppercase) {
            return .spellingOut
        }
        if isHouseNumber(tokens) { return .spellingOut }
        if isValueBegun(tokens) { return .spellingOut }
        if isUnfinishedList(stripped) { return .spellingOut }
        return finished
    }

    /// The text trimmed (`raw`) and without its closing periods, question and exclamation marks
    /// (`stripped`); nil when its marks say the voice carried on, in any language: Whisper writes
    /// an ellipsis, a comma or a dash there (and may put its period after them: "milk, eggs,.").
    package static func closed(_ text: String) -> (raw: String, stripped: String)? {
        let raw = text.trimmed
        if raw.hasSuffix("...") || raw.hasSuffix("…") { return nil }
        let stripped = String(raw.reversed().drop { ".?!".contains($0) }.reversed())
        if let mark = stripped.last, ",-—".contains(mark) { return nil }
        return (raw, stripped)
    }

    /// Whether a clause of the text opens as an English question does: a wh-word, or an
    /// auxiliary before its subject ("could you...", "is there..."), after any discourse word
    /// ("okay, and what is..."). The first clause or the last: "if I had nine boxes, what is nine
    /// times twelve?", "what time is it, please?".
    package static func isInterrogative(_ text: String) -> Bool {
        let clauses = text.split(separator: ",").map { words($0).drop(while: discourseWords.contains) }
        return [clauses.first, clauses.last].contains { clause in
            guard let clause, let opening = clause.first, questionOpenings.contains(opening) else { return false }
            // A wh-word before its subject opens a clause, not a question: "so what I was
            // thinking is", "where we live".
            return !(clause.dropFirst().first.map(subjectPronouns.contains) ?? false)
        }
    }

    /// The words a question opens with: wh-words and the auxiliaries and modals that go before
    /// their subject (not "you're", "it's": a subject is in them).
    package static let questionOpenings: Set<String> = [
        "what", "what's", "where", "where's", "when", "who", "who's", "whom", "whose", "why", "how", "how's", "which",
        "is", "are", "was", "were", "am", "do", "does", "did", "have", "has", "had", "will", "would", "can", "could", "shall",
        "should", "may", "might", "must", "isn't", "aren't", "wasn't", "weren't", "don't", "doesn't", "didn't", "haven't",
        "hasn't", "can't", "couldn't", "won't", "wouldn't", "shouldn't",
    ]

    /// Words that may come before a question's opening ("okay, so what...", "and is it...").
    package static let discourseWords: Set<String> = ["and", "so", "but", "okay", "ok", "oh", "well", "then", "now", "hey", "hi",
                                                       "hello", "sorry", "also", "actually", "um", "uh", "yes", "no", "right"]

    /// "at" and a number no clock reads ("at 22", "at twenty two", not "at 8" or "at seven
    /// thirty"): an address being read out, its street still to come, even when the cue before
    /// it was misheard ("I live at twenty two" written "I love at 22.": docs/benchmarks.md,
    /// "Parley's operating point").
    package static func isHouseNumber(_ tokens: [String]) -> Bool {
        guard let at = tokens.lastIndex(of: "at"), at < tokens.count - 1 else { return false }
        let number = tokens[(at + 1)...]
        guard number.allSatisfy(isCode), let first = number.first else { return false }
        if let value = Int(first) { return value > 12 }
        return tensWords.contains(first)
    }

    /// A clock's time, or a number of five digits or more in groups ("555-123-4567"), or a
    /// number word joined ("forty-two"); not "4-5", which Whisper writes for two digits said.
    package static func isWrittenWhole(_ chunk: some StringProtocol) -> Bool {
        if chunk.contains(":") { return chunk.contains(where: \.isNumber) }
        guard chunk.contains("-") else { return false }
        let digits = chunk.filter(\.isNumber).count
        if digits > 0 { return digits >= 5 }
        let parts = words(chunk)
        return !parts.isEmpty && parts.allSatisfy(numberWords.contains)
    }

    /// A value named, "is", then one word (or "a" and one: the letter A heard as the article):
    /// the value's first letters, which Whisper writes as a word when they are spelled ("The
    /// code is A B" written "The code is upbeat." and "The code is a beat.": Smart Turn scored
    /// the first 0.89 complete; docs/benchmarks.md, "Parley's operating point", 2026-11-28,
    /// later). A finished sentence of this shape ("the number is wrong") waits
    /// `spellingOutWaitMs`, a wrong guess's cost.
    package static func isValueBegun(_ tokens: [String]) -> Bool {
        guard tokens.count >= 3, let copula = tokens.lastIndex(where: { $0 == "is" || $0 == "was" }), copula > 0,
              valueNames.contains(tokens[copula - 1]) else { return false }
        let value = tokens[(copula + 1)...]
        return value.count == 1 || (value.count == 2 && ["a", "an"].contains(value.first))
    }

    /// Names of what is given by spelling it: narrower than `digitCues` ("my account is locked",
    /// "the address is old" are finished).
    package static let valueNames: Set<String> = ["code", "number", "pin", "zip", "postcode", "extension", "id", "reference", "confirmation"]

    package static let tensWords: Set<String> = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety", "hundred"]

    /// Lower-case words: letters, digits and apostrophes; anything else separates.
    package static func words(_ text: some StringProtocol) -> [String] {
        var tokens: [String] = []
        var current = ""
        for c in text.lowercased() {
            if c.isLetter || c.isNumber || c == "'" {
                current.append(c)
            } else if !current.isEmpty {
                tokens.append(current)
                current = ""
            }
        }
        if !current.isEmpty { tokens.append(current) }
        return tokens
    }

    /// Items read out with commas and no "and" yet ("I need milk, eggs"; Whisper writes the pause
    /// after the last as a period): a first clause of two words or more, then items of one or
    /// two words, none of them a closing word ("please", "thanks").
    package static func isUnfinishedList(_ text: String) -> Bool {
        let segments = text.split(separator: ",").map { words($0) }
        guard segments.count >= 2, let first = segments.first, first.count >= 2, let last = segments.last,
              (1...2).contains(last.count), !listClosers.contains(last.joined(separator: " ")) else { return false }
        return !segments.dropFirst().joined().contains { $0 == "and" || $0 == "or" }
    }

    package static let listClosers: Set<String> = ["please", "thanks", "thank you", "too", "then", "right", "okay", "ok", "sorry", "yes", "no"]

    /// Verbs that take an object, unfinished after "to" ("I would like to order").
    package static let objectVerbs: Set<String> = [
        "order", "book", "buy", "get", "make", "send", "find", "tell", "give", "bring", "add", "reserve", "schedule", "see",
    ]

    /// A number, or a token of a code ("sw1", "4567", "four").
    package static func isCode(_ token: String) -> Bool {
        token.contains(where: \.isNumber) || numberWords.contains(token)
    }

    /// Words after which no English sentence is over, a question either: articles, determiners,
    /// conjunctions, fillers, and adjectives that wait for their noun.
    package static let neverLast: Set<String> = [
        "a", "an", "the", "my", "your", "our", "their", "its", "his", "every", "each", "another", "whose",
        "and", "or", "but", "nor", "because", "cause", "if", "while", "although", "unless", "whether", "whereas", "plus",
        "um", "umm", "uh", "uhh", "uhm", "erm", "er", "eh", "basically", "just", "next", "same", "wrong", "recent",
    ]

    /// Words after which a statement is not over, though a question may be (a stranded
    /// preposition): prepositions and subject pronouns.
    package static let unfinishedEnds: Set<String> = [
        // prepositions
        "to", "for", "of", "at", "by", "with", "from", "about", "into", "onto", "between", "through", "during", "without",
        "than", "towards", "toward", "via", "per", "until", "since", "within", "across", "upon",
        // subject pronouns
        "i", "we", "they", "she",
    ]

    /// Auxiliaries and modals: unfinished last in a longer sentence ("I need to be", "it was").
    package static let auxiliaries: Set<String> = [
        "is", "are", "was", "were", "am", "be", "been", "being", "do", "does", "did", "have", "has", "had", "will", "would",
        "can", "could", "shall", "should", "may", "might", "must", "i'm", "it's", "i'd", "i'll", "you're", "we're",
        "they're", "that's", "there's", "he's", "she's", "gonna", "wanna", "gotta", "let's", "don't", "doesn't", "didn't",
        "can't", "won't",
    ]

    package static let pronouns: Set<String> = ["you", "i", "we", "it", "they", "he", "she"]

    /// Pronouns that are only ever a subject ("you" and "it" may be objects too): a wh-word
    /// before one opens a clause, not a question ("what I need", "where we live").
    package static let subjectPronouns: Set<String> = ["i", "we", "they", "he", "she"]

    /// Two-word endings that hold the turn: "let me think", "I mean", "I think that".
    package static let unfinishedPairs: Set<String> = [
        "me think", "me see", "me check", "i mean", "i meant", "you know", "hold on", "a second", "a moment", "one second",
        "one moment", "think that", "thought that", "said that", "know that", "sure that", "hope that", "believe that",
        "so that", "is that", "tell me", "show me", "give me", "let me",
    ]

    /// Two-word endings that finish one, though their last word alone would not: a particle
    /// ("come in", "log in"), "so" as a pro-form ("I think so"), a backchannel said whole.
    package static let finishedPairs: Set<String> = [
        "come in", "log in", "sign in", "check in", "logged in", "signed in", "checked in", "plug in", "turn on", "switch on",
        "think so", "hope so", "guess so", "said so", "believe so", "do so", "mm hmm", "uh huh", "is it", "it is",
    ]

    package static let numberWords: Set<String> = [
        "zero", "oh", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
        "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty", "thirty", "forty",
        "fifty", "sixty", "seventy", "eighty", "ninety", "hundred", "thousand", "double", "triple",
    ]

    /// Words that ask for digits: a single number after one of them may be the first of several.
    package static let digitCues: Set<String> = [
        "number", "code", "pin", "zip", "postcode", "extension", "digits", "card", "account", "phone", "id", "reference",
        "confirmation", "live", "address", "routing", "policy", "member",
    ]
}
