import Testing
@testable import Session
@testable import SessionEngine

/// A reply's first piece of speech may end at a clause, so the voice starts before the sentence
/// is written; a clause of fewer than three words stays with what follows.
@Suite struct FirstClauseTests {
    @Test func aClauseOfThreeWordsEndsTheFirstPiece() throws {
        let text = "Sure, I can help with that, let me look"
        let end = try #require(SpokenSentences.clauseEnd(in: text))
        #expect(text[..<end] == "Sure, I can help with that, ")
    }

    @Test func shortClausesAndNoMarkAreNoEnd() {
        #expect(SpokenSentences.clauseEnd(in: "Well, yes, I") == nil)
        #expect(SpokenSentences.clauseEnd(in: "The weather in Paris is") == nil)
        #expect(SpokenSentences.clauseEnd(in: "It costs 1,500 euros") == nil)
    }
}
