import Testing
@testable import Session
@testable import SessionEngine

/// The rules on a labelled corpus (`TurnWordsCorpus`): how many finished turns they let end
/// ("kept") and how many cut turns they would let end in the pause ("false finished"), each text
/// as Whisper may write it: bare, and with a final period (which Whisper adds to cut clips too).
/// The figures are printed for docs/benchmarks.md ("The words of a turn"); the floors are below
/// what was measured, so that a change to the lists that makes them worse fails here.
@Suite struct TurnWordsCorpusTests {
    struct Score: CustomStringConvertible {
        var kept = 0, finished = 0, falseFinished = 0, cut = 0
        var keptRate: Double { Double(kept) / Double(max(1, finished)) }
        var falseFinishedRate: Double { Double(falseFinished) / Double(max(1, cut)) }
        var description: String {
            "kept \(kept)/\(finished) (\(Int((keptRate * 1000).rounded()) / 10)%), false finished \(falseFinished)/\(cut) (\(Int((falseFinishedRate * 1000).rounded()) / 10)%)"
        }
    }

    static func score(_ corpus: [(String, String, Bool)], misses: inout [String]) -> Score {
        var score = Score()
        for (category, text, finished) in corpus {
            let bare = String(text.reversed().drop { ".?!".contains($0) }.reversed())
            for form in [bare, finished ? text : bare + "."] {
                // A question ends a turn as a finished sentence does, sooner.
                let judged = [.finished, .asked].contains(TurnWords.judge(form))
                if finished {
                    score.finished += 1
                    if judged { score.kept += 1 } else { misses.append("finished, held: \(form)") }
                } else {
                    score.cut += 1
                    if judged { score.falseFinished += 1; misses.append("cut (\(category)), finished: \(form)") }
                }
            }
        }
        return score
    }

    @Test func theRulesOnTheTuningSet() {
        var misses: [String] = []
        let score = Self.score(TurnWordsCorpus.tuning, misses: &misses)
        print("TurnWords tuning: \(score)")
        #expect(score.keptRate >= 0.9 && score.falseFinishedRate <= 0.2, "\(score): \(misses)")
    }

    @Test func theRulesOnTheHeldOutSet() {
        var misses: [String] = []
        let score = Self.score(TurnWordsCorpus.heldOut, misses: &misses)
        print("TurnWords held out: \(score)")
        #expect(score.keptRate >= 0.85 && score.falseFinishedRate <= 0.3, "\(score): \(misses)")
    }
}
