/// The language a sentence of a reply is written in, when its words say so plainly: a model told
/// that the user speaks Spanish may still answer a sentence in English (a name, a quote, a switch
/// of its own), and espeak-ng's Spanish voice reads English words as Spanish sounds, as Piper's
/// English joe reads Spanish (issue 75: "the reply text's language followed").
///
/// Read from the language's most common short words (articles, pronouns, prepositions, a few
/// greetings) and the letters only it writes, among the languages `make bench-languages` measures.
/// A word several languages share counts for each a share (Dutch "na" and "de" are Portuguese
/// too). A guess is made only when it is plain: two words' worth at least, half a word ahead of
/// the next language, and no word of the voice's own language; otherwise the sentence keeps the
/// session's voice, so a reply in the session's language never changes voice on a name or a
/// borrowed word; an English session never changes voice. On the bench's sentences (which the
/// lists were not drawn from) it finds 7 to 9 of 10 English sentences in each other language's
/// session, and names none wrongly (`TextLanguageTests`).
public enum TextLanguage {
    /// Words that mark a language, lower case; a word several languages share counts for each.
    static let words: [String: Set<String>] = [
        "en": ["the", "and", "is", "are", "you", "your", "to", "of", "it", "that", "this", "for", "with", "what",
               "have", "be", "can", "will", "would", "please", "thank", "thanks", "i", "we", "my", "how", "there",
               "a", "an", "i'm", "it's", "in", "on", "at", "than", "not", "but", "or", "from", "by", "do"],
        "es": ["el", "la", "los", "las", "que", "de", "y", "es", "en", "un", "una", "por", "para", "con", "no", "su",
               "al", "lo", "como", "pero", "está", "hola", "gracias", "usted", "quiero", "puedo", "tengo", "esta", "hoy"],
        "de": ["der", "die", "das", "und", "ist", "nicht", "ich", "sie", "es", "ein", "eine", "zu", "mit", "für",
               "auf", "den", "dem", "von", "wir", "ja", "bitte", "danke", "haben", "kann", "heute", "gern", "ihr"],
        "fr": ["le", "la", "les", "de", "des", "et", "est", "un", "une", "je", "vous", "il", "que", "pour", "pas",
               "dans", "en", "du", "au", "ce", "avec", "sur", "merci", "bonjour", "votre", "nous", "peux"],
        "it": ["il", "lo", "la", "gli", "le", "di", "che", "e", "è", "un", "una", "per", "non", "con", "sono", "del",
               "della", "ho", "mi", "ti", "grazie", "ciao", "questo", "come", "stasera", "certo"],
        "pt": ["o", "a", "os", "as", "de", "que", "e", "é", "um", "uma", "para", "com", "não", "do", "da", "em",
               "no", "na", "você", "obrigado", "obrigada", "por", "mais"],
        "nl": ["de", "het", "een", "en", "is", "van", "ik", "je", "niet", "dat", "op", "te", "voor", "met", "zijn",
               "wat", "maar", "ook", "dank", "hoe", "graag", "vanavond", "u"],
    ]
    /// Letters one language writes and the others here do not.
    static let marks: [String: Set<Character>] = [
        "es": ["ñ", "¿", "¡"], "de": ["ß", "ä", "ö", "ü"], "fr": ["ç", "ê", "ë", "œ"], "pt": ["ã", "õ"],
    ]
    /// The fewest words' worth a guess needs, and its lead over the next language.
    static let least = 2.0
    static let lead = 0.5
    /// How many languages' lists hold each word.
    static let sharing: [String: Int] = words.values.reduce(into: [:]) { shared, set in
        for word in set { shared[word, default: 0] += 1 }
    }

    /// The language `text` is plainly written in, if it is not `current`'s (nil: the session's
    /// voice stays); never for an English session (`current` nil or `en`).
    public static func plainly(_ text: String, current: String?) -> String? {
        // An English session's replies keep their voice, as before issue 75: Piper's joe, whose
        // sentences ("a small rule-based program rather than a language model") hold few of these
        // words and read as Portuguese on the two a's alone.
        guard let current, current != "en" else { return nil }
        let lowered = text.lowercased()
        var scores: [String: Double] = [:]
        for word in lowered.split(whereSeparator: { !$0.isLetter && $0 != "'" }) {
            let word = String(word)
            guard let shared = sharing[word] else { continue }
            for (language, set) in words where set.contains(word) { scores[language, default: 0] += 1 / Double(shared) }
        }
        for (language, set) in marks where lowered.contains(where: set.contains) { scores[language, default: 0] += 1 }
        guard scores[current, default: 0] == 0 else { return nil }
        let ranked = scores.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
        guard let best = ranked.first, best.value >= least else { return nil }
        if ranked.count > 1, ranked[1].value > best.value - lead { return nil }
        return best.key
    }
}
