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

    /// Spanish, German, French, Italian, Portuguese and Dutch sentences in an English session,
    /// and English ones in each of those: never another language's voice, and some of them their
    /// own (73 of 120 in all, 2026-11-29; short sentences often hold too few of a language's words).
    @Test(arguments: ["es", "de", "fr", "it", "pt", "nl"])
    func aSentenceInAnotherLanguageIsSpokenInIt(language: String) {
        let foreign = Self.sentences[language] ?? []
        let found = foreign.map { TextLanguage.plainly($0, current: "en") }
        #expect(found.allSatisfy { $0 == nil || $0 == language }, "\(language): \(found)")
        #expect(found.filter { $0 == language }.count >= 2, "\(language): \(found)")
        let english = (Self.sentences["en"] ?? []).map { TextLanguage.plainly($0, current: language) }
        #expect(english.allSatisfy { $0 == nil || $0 == "en" }, "English in a \(language) session: \(english)")
        #expect(english.filter { $0 == "en" }.count >= english.count / 2, "English in a \(language) session: \(english)")
        print("\(language): \(found.filter { $0 == language }.count) of \(found.count) found in an English session; English in it: \(english.filter { $0 == "en" }.count) of \(english.count)")
    }

    @Test func aNameOrABorrowedWordIsNoSwitch() {
        #expect(TextLanguage.plainly("Your table at La Pergola is booked.", current: nil) == nil)
        #expect(TextLanguage.plainly("Buen provecho!", current: nil) == nil)
        #expect(TextLanguage.plainly("Claro, la reserva está hecha para el sábado.", current: "es") == nil)
        #expect(TextLanguage.plainly("Claro, la reserva está hecha para el sábado.", current: nil) == "es")
    }
}
