/// The words the turn's rules read in Spanish, German, French and Italian (issue 75), as
/// `TurnWords` and `ReplyInterruption` read English's: what no sentence ends on (a turn whose
/// words end there is not over), what a listener says over a reply to show they listen
/// (a backchannel: the reply goes on), and what asks for the floor (a barge-in on its own). Any
/// other language has no rules of words: its turns end by the audio alone (Smart Turn, trained on
/// 23 languages, and the silence), and its speech over a reply is weighed by its length and its
/// word count.
///
/// The lists hold closed classes only (articles, possessives, conjunctions, prepositions that are
/// never a verb's particle, fillers), as the English ones do: a wrong "unfinished" costs a
/// finished turn the longest wait. German's separable particles ("Mach das Licht aus", "Ich rufe
/// dich an") end sentences, so `aus`, `an`, `auf`, `ein`, `mit`, `zu`, `vor`, `um`, `nach` are
/// not in its list.
public struct TurnLexicon: Sendable, Equatable {
    public let neverLast: Set<String>
    public let backchannelWords: Set<String>
    /// Two words, lower case, as `TurnWords.words` splits them.
    public let backchannelPhrases: Set<String>
    public let interruptionWords: Set<String>

    /// The lexicon of `language` (ISO-639-1), nil for English (its rules are `TurnWords`' and
    /// `ReplyInterruption`'s own) and for the languages with none.
    public static func of(_ language: String?) -> TurnLexicon? {
        switch language {
        case "es": spanish
        case "de": german
        case "fr": french
        case "it": italian
        default: nil
        }
    }

    /// The words' verdict on the turn's end, as `TurnWords.judge`'s simpler half: a trailing
    /// ellipsis, comma or dash (`TurnWords.closed`), or a last word no sentence ends on, is
    /// unfinished; a question mark is asked (these four languages mark their questions, Spanish at
    /// both ends); anything else is finished. nil: no words.
    public func judge(_ text: String) -> TurnWords.Judgement? {
        guard let (raw, stripped) = TurnWords.closed(text) else { return .unfinished }
        guard let last = TurnWords.words(stripped).last else { return nil }
        if neverLast.contains(last) { return .unfinished }
        return raw.hasSuffix("?") ? .asked : .finished
    }

    static let spanish = TurnLexicon(
        neverLast: ["el", "la", "los", "las", "un", "una", "unos", "unas", "mi", "mis", "tu", "tus", "su", "sus", "nuestro", "nuestra",
                    "y", "e", "o", "u", "pero", "porque", "que", "si", "aunque", "cuando", "como", "de", "del", "a", "al", "en", "con",
                    "por", "para", "sin", "sobre", "entre", "hasta", "desde", "hacia", "eh", "em", "ehm", "este", "pues"],
        backchannelWords: ["sí", "si", "vale", "claro", "ajá", "aha", "ya", "bueno", "ok", "okay", "mhm", "exacto", "cierto", "genial",
                           "perfecto", "eh", "ah", "oh", "mm", "hmm"],
        backchannelPhrases: ["de acuerdo", "ya veo", "ah ya", "sí sí", "claro claro"],
        interruptionWords: ["espera", "espere", "para", "pare", "no", "pero", "perdón", "perdona", "oye", "disculpa", "alto", "momento"])

    static let german = TurnLexicon(
        neverLast: ["der", "die", "das", "den", "dem", "des", "eine", "einen", "einem", "einer", "eines", "mein", "meine", "meinen",
                    "meinem", "dein", "deine", "sein", "seine", "unser", "unsere", "und", "oder", "aber", "weil", "dass", "wenn", "ob",
                    "denn", "sondern", "für", "von", "bei", "zum", "zur", "im", "vom", "beim", "ohne", "gegen", "wegen", "während",
                    "ähm", "äh", "ehm", "also"],
        backchannelWords: ["ja", "genau", "klar", "stimmt", "richtig", "okay", "ok", "gut", "mhm", "aha", "achso", "super", "prima",
                           "jaja", "ah", "oh", "mm", "hmm"],
        backchannelPhrases: ["alles klar", "ach so", "ja ja", "ja genau", "na klar"],
        interruptionWords: ["warte", "warten", "stopp", "stop", "nein", "aber", "moment", "halt", "entschuldigung"])

    static let french = TurnLexicon(
        neverLast: ["le", "la", "les", "un", "une", "des", "du", "de", "mon", "ma", "mes", "ton", "ta", "tes", "son", "sa", "ses",
                    "notre", "votre", "leur", "et", "ou", "mais", "parce", "que", "si", "quand", "à", "au", "aux", "en", "dans",
                    "avec", "pour", "par", "sur", "sous", "sans", "chez", "vers", "entre", "euh", "heu", "ben"],
        backchannelWords: ["oui", "ouais", "d'accord", "ok", "okay", "voilà", "exactement", "bien", "mhm", "ah", "oh", "super",
                           "parfait", "entendu", "mm", "hmm"],
        backchannelPhrases: ["bien sûr", "ah bon", "je vois", "oui oui", "très bien"],
        interruptionWords: ["attends", "attendez", "arrête", "arrêtez", "non", "mais", "pardon", "excusez", "stop", "minute"])

    static let italian = TurnLexicon(
        neverLast: ["il", "lo", "la", "i", "gli", "le", "un", "uno", "una", "mio", "mia", "miei", "mie", "tuo", "tua", "suo", "sua",
                    "e", "ed", "o", "ma", "perché", "che", "se", "quando", "di", "del", "della", "a", "al", "alla", "da", "dal",
                    "in", "nel", "nella", "con", "su", "sul", "per", "tra", "fra", "senza", "ehm", "cioè"],
        backchannelWords: ["sì", "si", "certo", "esatto", "giusto", "già", "ok", "okay", "bene", "perfetto", "mhm", "ah", "oh",
                           "d'accordo", "capito", "mm", "hmm"],
        backchannelPhrases: ["va bene", "ho capito", "sì sì", "certo certo"],
        interruptionWords: ["aspetta", "aspetti", "basta", "ferma", "fermati", "no", "ma", "scusa", "scusi", "stop", "momento"])
}
