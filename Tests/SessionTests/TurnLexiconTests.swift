import Testing
@testable import SessionEngine

/// The turn's words in Spanish, German, French and Italian (issue 75): a turn that ends on a word
/// no sentence ends on is unfinished, a question is asked, and a listener's "sí", "genau", "d'accord"
/// or "va bene" over a reply is a backchannel; other languages have no rules of words.
@Suite struct TurnLexiconTests {
    @Test func unfinishedWordsFinishedSentencesAndQuestions() {
        let cases: [(String, String, TurnWords.Judgement?)] = [
            ("es", "Quisiera reservar una mesa para", .unfinished),
            ("es", "Necesito cambiar la fecha de", .unfinished),
            ("es", "Quisiera reservar una mesa para dos personas.", .finished),
            ("es", "¿A qué hora abre la farmacia?", .asked),
            ("es", "Eh...", .unfinished),
            ("de", "Ich möchte einen Tisch für", .unfinished),
            ("de", "Ich brauche das Datum und", .unfinished),
            // A separable verb's particle ends a German sentence.
            ("de", "Bitte schalte das Licht aus.", .finished),
            ("de", "Wann öffnet die Apotheke?", .asked),
            ("fr", "Je voudrais réserver une table pour", .unfinished),
            ("fr", "Ma commande n'est pas arrivée, euh", .unfinished),
            ("fr", "Je voudrais parler au service technique.", .finished),
            ("fr", "Quel temps fait-il à Paris ?", .asked),
            ("it", "Vorrei prenotare un tavolo per", .unfinished),
            ("it", "Devo cambiare la data del", .unfinished),
            ("it", "Il mio ordine non è ancora arrivato.", .finished),
            ("it", "Che tempo fa oggi a Roma?", .asked),
            // No rules of words in Portuguese: the audio alone decides.
            ("pt", "Eu gostaria de reservar uma mesa para", nil),
        ]
        for (language, text, judgement) in cases {
            #expect(TurnWords.judge(text, language: language) == judgement, "\(language): \(text)")
        }
        // English is judged as it always was.
        #expect(TurnWords.judge("I would like to book a table for", language: "en") == .unfinished)
        #expect(TurnWords.judge("I would like to book a table for") == .unfinished)
    }

    @Test func backchannelsAndWordsThatAskForTheFloorInEachLanguage() {
        let cases: [(String, String, Int, Int, Bool)] = [
            ("es", "Sí, vale.", 0, 2, false),
            ("es", "de acuerdo", 0, 1, false),
            ("es", "Espera, quiero otra cosa.", 4, 0, true),
            ("de", "Ja, genau.", 0, 1, false),
            ("de", "Alles klar.", 0, 1, false),
            ("de", "Moment, das stimmt nicht.", 3, 1, true),
            ("fr", "Oui, d'accord.", 0, 2, false),
            ("fr", "Bien sûr.", 0, 1, false),
            ("fr", "Attendez, ce n'est pas ça.", 5, 0, true),
            ("it", "Sì, va bene.", 0, 2, false),
            ("it", "Aspetta, non è giusto.", 3, 1, true),
            ("it", "È giusto.", 1, 1, false),
        ]
        for (language, text, words, backchannels, asks) in cases {
            let counted = ReplyInterruption.count(text, lexicon: TurnLexicon.of(language))
            #expect(counted.words == words && counted.backchannels == backchannels && counted.asksForTheFloor == asks,
                    "\(language): \(text): \(counted)")
        }
        // English's lists where the language has none.
        #expect(ReplyInterruption.count("Uh huh.", lexicon: TurnLexicon.of("pt")).backchannels == 1)
    }
}
