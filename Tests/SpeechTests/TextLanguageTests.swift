import JSON
import Loop
@testable import Speech
import Testing

/// Which voice a reply's sentence is spoken in when the model wrote it in another language than
/// the session's (`TextLanguage`), on the bench's sentences (scripts/benchmarks/language_sentences.json),
/// which the word lists were not drawn from.
struct TextLanguageTests {
    static let sentences: [String: [String]] = {
        guard let bytes = Sys.readFile("scripts/benchmarks/language_sentences.json"),
              let table = try? JSON(parsing: String(decoding: bytes, as: UTF8.self)).object else { return [:] }
        var byLanguage: [String: [String]] = [:]
        for (language, list) in table where language != "_about" { byLanguage[language] = list.array?.compactMap(\.string) }
        return byLanguage
    }()

    @Test func aSentenceInTheSessionsOwnLanguageKeepsItsVoice() {
        #expect(Self.sentences.count == 7)
        for (language, list) in Self.sentences {
            for sentence in list {
                #expect(TextLanguage.plainly(sentence, current: language) == nil, "\(language): \(sentence)")
            }
        }
        // A session that sets none is heard, and answered, in English.
        for sentence in Self.sentences["en"] ?? [] { #expect(TextLanguage.plainly(sentence, current: nil) == nil, "\(sentence)") }
    }

    /// English sentences in a Spanish, German, French, Italian, Portuguese or Dutch session: never
    /// another language's voice, and most of them English's; and an English session never changes
    /// voice, whatever its sentences hold (the built-in agent's read as Portuguese on two a's).
    @Test(arguments: ["es", "de", "fr", "it", "pt", "nl"])
    func anEnglishSentenceInAnotherLanguagesSessionIsSpokenInEnglish(language: String) {
        let english = (Self.sentences["en"] ?? []).map { TextLanguage.plainly($0, current: language) }
        #expect(english.allSatisfy { $0 == nil || $0 == "en" }, "English in a \(language) session: \(english)")
        #expect(english.filter { $0 == "en" }.count >= english.count / 2, "English in a \(language) session: \(english)")
        print("\(language): English in it found \(english.filter { $0 == "en" }.count) of \(english.count)")
        for sentence in Self.sentences[language] ?? [] { #expect(TextLanguage.plainly(sentence, current: "en") == nil) }
        #expect(TextLanguage.plainly("Hello! I'm Parley's built-in agent, a small rule-based program rather than a language model.", current: nil) == nil)
    }

    @Test func aNameOrABorrowedWordIsNoSwitch() {
        #expect(TextLanguage.plainly("Su mesa en The Ivy está reservada.", current: "es") == nil)
        #expect(TextLanguage.plainly("Enjoy!", current: "es") == nil)
        #expect(TextLanguage.plainly("Claro, la reserva está hecha para el sábado.", current: "es") == nil)
        #expect(TextLanguage.plainly("Of course, the booking is made for Saturday.", current: "es") == "en")
    }
}
