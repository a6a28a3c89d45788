import Testing
@testable import Session
@testable import SessionEngine

/// The text signal on its own: finished thoughts, cut ones, and numbers being read out, as
/// Whisper writes them (with and without its punctuation).
struct TurnWordsTests {
    @Test(arguments: [
        "Please book me a table for two at eight.", "Yes.", "Paris", "tomorrow at nine", "No thanks.", "I see", "Thank you",
        "Can you tell me a joke", "Set an alarm for 7 in the morning", "Book a table for 2 at 8", "That's right.",
        // A question mark without a question's form: a statement said rising, a fragment.
        "You're open on Sunday?", "I was wondering if you could book it?", "Paris?",
    ])
    func finished(_ text: String) {
        #expect(TurnWords.judge(text) == .finished, "\(text)")
    }

    /// Questions in form and heard as questions: Parley's talkers' and the turn-taking scenarios'.
    @Test(arguments: [
        "What is the weather like in Paris today?", "Good morning, how are you?", "What is 12 times 7?",
        "Could you please tell me what twelve times seven is?", "If I had nine boxes with twelve apples in each, what is nine times twelve?",
        "I was wondering, what is 345 plus 120?", "Okay, and how much does a ticket to Rome cost?", "Is it?", "What are you looking for?",
        "Can you send the report to my manager?",
    ])
    func asked(_ text: String) {
        #expect(TurnWords.judge(text) == .asked, "\(text)")
    }

    /// A question mark does not lift the rules that hold a turn: what Whisper wrote in the pauses
    /// of the operating point's scenarios (docs/benchmarks.md, "Parley's operating point").
    @Test(arguments: ["Can you tell me?", "I was wondering if you could?", "Could you?", "Is that?", "So what I was thinking is?"])
    func questionMarksOnFragmentsHoldTheTurn(_ text: String) {
        #expect(TurnWords.judge(text) == .unfinished, "\(text)")
    }

    @Test(arguments: [
        "I need a flight to", "I need a flight to.", "I would like to order a", "Can you send the report to my", "Add milk, eggs and",
        "Add milk, eggs,", "I want to um", "Um.", "Let me think.", "Well...", "I was wondering if", "My name is", "It's the one that I",
        "Could you", "I think I", "and then—",
    ])
    func unfinished(_ text: String) {
        #expect(TurnWords.judge(text) == .unfinished, "\(text)")
    }

    @Test(arguments: ["My account number is four five", "It is four five six seven.", "My number is 4", "The code is 4567", "Call 555 12"])
    func spellingOut(_ text: String) {
        #expect(TurnWords.judge(text) == .spellingOut, "\(text)")
    }

    @Test func noWordsIsNoJudgement() {
        #expect(TurnWords.judge("") == nil)
        #expect(TurnWords.judge("  ") == nil)
        #expect(TurnWords.judge("?!") == nil)
    }
}

/// The rules added after the first `make bench-turns` run: what Smart Turn had answered in the pause.
struct TurnWordsFromTheBenchTests {
    @Test(arguments: ["I would like to order", "I would like to order.", "I need to book", "Could I get a"])
    func aVerbWaitingForItsObjectIsUnfinished(_ text: String) {
        #expect(TurnWords.judge(text) != .finished, "\(text)")
    }

    @Test(arguments: ["The code is A B", "I need milk, eggs.", "I need milk, eggs", "My postcode is SW1"])
    func itemsBeingReadOutWaitPastAPause(_ text: String) {
        #expect(TurnWords.judge(text) == .spellingOut, "\(text)")
    }

    /// The two pauses answered at the default in "Parley's operating point": letters written as
    /// one word after a cue, and an address whose cue was misheard ("live" as "love").
    @Test(arguments: ["The code is AB.", "My postcode is SW", "I love at 22.", "We are at 221", "She lives at twenty two", "I'm at forty five"])
    func lettersAsOneWordAndHouseNumbersWaitPastAPause(_ text: String) {
        #expect(TurnWords.judge(text) == .spellingOut, "\(text)")
    }

    /// Spelled letters Whisper wrote as words after a value's name (the code's pause in espeak-ng
    /// en-us, three runs of three).
    @Test(arguments: ["The code is upbeat.", "The code is a beat.", "My zip is nice.", "The reference number was Abby."])
    func lettersHeardAsWordsAfterAValuesNameWaitPastAPause(_ text: String) {
        #expect(TurnWords.judge(text) == .spellingOut, "\(text)")
    }

    /// Two digits said apart and written with a dash (the account number's pause in Piper joe).
    @Test(arguments: ["My account in September is 4-5.", "My account number is 4-5 6-7"])
    func digitsWrittenWithADashAreStillBeingReadOut(_ text: String) {
        #expect(TurnWords.judge(text) == .spellingOut, "\(text)")
    }

    @Test(arguments: ["My number is 555-123-4567.", "See you at 7:30.", "I am forty-two."])
    func aNumberWrittenWholeIsFinished(_ text: String) {
        #expect(TurnWords.judge(text) == .finished, "\(text)")
    }

    @Test(arguments: ["My account is locked.", "The address is old.", "The code is not working.", "My number is the same as before.", "This is great."])
    func aValueNotBeingGivenIsStillFinished(_ text: String) {
        #expect(TurnWords.judge(text) == .finished, "\(text)")
    }

    @Test(arguments: ["See you at 7.", "I work at IBM.", "The band is ABBA.", "Wake me at 12", "Call me at six"])
    func aTimeOrANameIsStillFinished(_ text: String) {
        #expect(TurnWords.judge(text) == .finished, "\(text)")
    }

    @Test(arguments: ["Add milk, eggs and bread.", "A table for two, please.", "I want to cancel.", "Yes, I see."])
    func listsWithTheirEndAndClosingWordsAreFinished(_ text: String) {
        #expect(TurnWords.judge(text) == .finished, "\(text)")
    }
}

/// Questions Whisper wrote as questions may strand a preposition or an auxiliary.
struct TurnWordsQuestionTests {
    @Test(arguments: ["Could you please tell me what twelve times seven is?", "What are you looking for?", "Where are you from?", "Who is it for?"])
    func aQuestionMayEndInAnAuxiliaryOrAPreposition(_ text: String) {
        #expect(TurnWords.judge(text) == .asked, "\(text)")
    }

    @Test(arguments: ["Can you tell me?", "Is it the?", "Do you want milk and?"])
    func butNotInAnArticleAConjunctionOrAHeldPair(_ text: String) {
        #expect(TurnWords.judge(text) == .unfinished, "\(text)")
    }
}
