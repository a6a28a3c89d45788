/// Where a reply's text is cut for the voice (`SpeechOutput`): its first piece may end at a
/// clause, so that the voice starts on "Sure, I can help with that," while the model is still
/// writing the sentence's end; later pieces are whole sentences. The engine asks it too, for a
/// speculative reply's first piece (`PreparedSpeech`), so it lives with the engine's values.
package enum SpokenSentences {
    /// The reply's first piece of speech in `text` (`complete`: the text is all there is): what
    /// `SpeechOutput` would hand the voice first, for `PreparedSpeech` to make ahead.
    package static func firstPiece(of text: String, complete: Bool) -> String? {
        guard let end = sentenceEnd(in: text) ?? clauseEnd(in: text) else {
            let whole = text.trimmed
            return complete && !whole.isEmpty ? whole : nil
        }
        let piece = String(text[..<end]).trimmed
        return piece.isEmpty ? nil : piece
    }

    /// After a clause's mark (, ; : —) and the space after it, with at least `clauseWords` words
    /// before it (a clause of fewer, "Well," or "Yes,", is spoken with what follows).
    package static func clauseEnd(in text: String) -> String.Index? {
        var previous: Character?
        var words = 0
        for i in text.indices {
            let c = text[i]
            if c == " ", let p = previous, p != " " { words += 1 }
            if let p = previous, ",;:—".contains(p), c == " ", words >= clauseWords { return text.index(after: i) }
            previous = c
        }
        return nil
    }

    package static let clauseWords = 3

    /// After a sentence's closing mark and the space (or end of line) after it.
    package static func sentenceEnd(in text: String) -> String.Index? {
        var previous: Character?
        for i in text.indices {
            let c = text[i]
            if let p = previous, ".!?".contains(p), c == " " || c == "\n" { return text.index(after: i) }
            if c == "\n" { return text.index(after: i) }
            previous = c
        }
        return nil
    }
}

package extension String {
    /// Without the whitespace at either end.
    var trimmed: String {
        String(drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }
}
