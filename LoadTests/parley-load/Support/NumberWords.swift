/// Spelled-out numbers folded to digits, so that "three hundred and forty five" and "345" are the
/// same words to an eval: a run of number words becomes one number, a new one starting where the
/// run cannot go on ("four five" is 4 and 5, as a spoken digit string is; "twenty five" is 25).
enum NumberWords {
    static let units = ["zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9]
    static let teens = ["ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
                        "seventeen": 17, "eighteen": 18, "nineteen": 19]
    static let tens = ["twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90]
    static let scales = ["thousand": 1_000, "million": 1_000_000]

    static func isNumberWord(_ word: String) -> Bool {
        units[word] != nil || teens[word] != nil || tens[word] != nil || scales[word] != nil || word == "hundred"
    }

    static func fold(_ words: [String]) -> [String] {
        var out: [String] = []
        // The number being read: what scales have closed, and the part under the last scale.
        var total = 0, part = 0, reading = false, lastWasUnit = false
        func close() {
            if reading { out.append(String(total + part)) }
            total = 0; part = 0; reading = false; lastWasUnit = false
        }
        for (index, word) in words.enumerated() {
            // "hundred and five": the "and" belongs to the number when one goes on after it.
            if word == "and", reading, part % 100 == 0, part > 0 || total > 0, index + 1 < words.count, isNumberWord(words[index + 1]) { continue }
            if let unit = units[word] {
                if reading && (lastWasUnit || part % 10 != 0) { close() }
                part += unit; reading = true; lastWasUnit = true
            } else if let teen = teens[word] {
                if reading && part % 100 != 0 { close() }
                part += teen; reading = true; lastWasUnit = true
            } else if let ten = tens[word] {
                if reading && part % 100 != 0 { close() }
                part += ten; reading = true; lastWasUnit = false
            } else if word == "hundred" {
                // "three hundred"; "hundred" alone is one; after a hundred or a scale, a new number.
                if (1..<100).contains(part) {
                    part *= 100
                } else {
                    if part != 0 { close() }
                    part = 100
                }
                reading = true; lastWasUnit = false
            } else if let scale = scales[word] {
                total += (reading && part > 0 ? part : 1) * scale; part = 0; reading = true; lastWasUnit = false
            } else {
                close()
                out.append(word)
            }
        }
        close()
        return out
    }
}
