import Testing
import JSON
import Models

@Suite struct BuiltinAgentTests {
    let agent = BuiltinAgent()

    private func reply(_ texts: String...) -> String {
        agent.reply(to: texts.map { ChatMessage(role: .user, text: $0) })
    }

    @Test func greetingIsAnsweredWithWhatItCanDo() {
        let answer = reply("Hello!")
        #expect(answer.hasPrefix("Hello!"))
        #expect(answer.contains("rule-based"))
        #expect(answer.contains("arithmetic"))
        #expect(reply("good morning").hasPrefix("Hello!"))
    }

    @Test(arguments: [
        ("what is 12 times 7", "12 times 7 is 84."),
        ("What's twelve times seven?", "12 times 7 is 84."),
        ("calculate 2.5 + 4 * 3", "2.5 plus 4 times 3 is 14.5."),
        ("what is 100 divided by 8", "100 divided by 8 is 12.5."),
        ("twenty-one minus four", "21 minus 4 is 17."),
        ("one hundred and five multiplied by 2", "105 times 2 is 210."),
        ("10 / 3", "10 divided by 3 is 3.3333."),
        ("what is 1,000 plus 1", "1000 plus 1 is 1001."),
        ("12x7", "12 times 7 is 84."),
    ])
    func arithmeticInTheQuestionIsWorkedOut(question: String, answer: String) {
        #expect(reply(question) == answer)
    }

    @Test func divisionByZeroIsExplained() {
        #expect(reply("what is 5 divided by 0").contains("dividing by zero"))
    }

    @Test func greetingAndQuestionTogetherGetBoth() {
        #expect(reply("hi, what is 2 plus 2?") == "Hello! 2 plus 2 is 4.")
    }

    @Test func wordsAreCountedInQuotesAfterAColonOrInThePreviousMessage() {
        #expect(reply("how many words in 'to be or not to be'") == "\"to be or not to be\" has 6 words.")
        #expect(reply("count the words: the quick brown fox") == "\"the quick brown fox\" has 4 words.")
        #expect(reply("I like green tea a lot", "how many words was that?") == "Your previous message has 6 words.")
        #expect(reply("how many words") == "Your message has 3 words.")
    }

    @Test func charactersAndLettersAreCounted() {
        #expect(reply("how many characters in \"hello world\"") == "\"hello world\" has 11 characters (10 letters, 2 words).")
        #expect(reply("how many letters in \"don't\"") == "\"don't\" has 4 letters.")
    }

    @Test func summaryListsWhatTheUserSaid() {
        let messages = [
            ChatMessage(role: .user, text: "My name is Ada."),
            ChatMessage(role: .assistant, text: "Nice to meet you."),
            ChatMessage.untranscribedSpeech(milliseconds: 2400),
            ChatMessage(role: .user, text: "I need a train to Paris."),
            ChatMessage(role: .user, text: "Can you summarise what I said?"),
        ]
        let answer = agent.reply(to: messages)
        #expect(answer == "So far you wrote 2 messages of 10 words in all: \"My name is Ada.\" and \"I need a train to Paris.\", and you spoke once for about 2.4 seconds in all, which I could not transcribe.")
    }

    @Test func summaryWithNothingEarlierSaysSo() {
        #expect(reply("summarize").contains("nothing to summarise yet"))
    }

    @Test func askingWhatItIsExplainsHowToPlugInARealModel() {
        for question in ["Who are you?", "what can you do", "help", "How do I use a real LLM?"] {
            let answer = reply(question)
            #expect(answer.contains("not a language model"), "\(question)")
            #expect(answer.contains("parley serve --llm openai --llm-base-url"), "\(question)")
        }
    }

    @Test func somethingItDoesNotUnderstandGetsAnHonestAnswerAndTheWayOut() {
        let answer = reply("Write me a sonnet about the sea")
        #expect(answer.hasPrefix("I'm a small rule-based agent, and I didn't understand \"Write me a sonnet about the sea\"."))
        #expect(answer.contains(BuiltinAgent.realModelCommand))
    }

    @Test func spokenTurnsAreAcknowledgedByTheirLength() {
        let one = agent.reply(to: [ChatMessage.untranscribedSpeech(milliseconds: 2430)])
        #expect(one.hasPrefix("I heard you speak for about 2.4 seconds, but no transcriber is configured"))
        let two = agent.reply(to: [ChatMessage.untranscribedSpeech(milliseconds: 1000), ChatMessage(role: .assistant, text: "..."), ChatMessage.untranscribedSpeech(milliseconds: 800)])
        #expect(two.contains("about 0.8 seconds"))
        #expect(two.contains("That was your 2nd spoken turn."))
    }

    @Test func timeQuestionsAreAnsweredHonestlyAndDeterministically() {
        let answer = reply("What time is it?")
        #expect(answer.contains("no clock"))
        #expect(answer == reply("What time is it?"))
    }

    @Test func thanksAndGoodbyeAreAnswered() {
        #expect(reply("thanks a lot").hasPrefix("You're welcome"))
        #expect(reply("ok bye").hasPrefix("Goodbye"))
    }

    @Test func anEmptyConversationGetsTheIntroduction() {
        #expect(agent.reply(to: []).hasPrefix("Hello! I'm Parley's built-in agent"))
        #expect(agent.reply(to: [ChatMessage(role: .system, text: "Be brief.")]).hasPrefix("Hello!"))
    }

    @Test func untranscribedSpeechPlaceholderSaysTheDuration() {
        #expect(ChatMessage.untranscribedSpeech(milliseconds: 2449).text == "[the user spoke for 2.4 s; no transcriber is configured]")
        #expect(ChatMessage.untranscribedSpeech(milliseconds: 2450).spokenMilliseconds == 2450)
    }
}

/// The arguments the built-in agent makes from what was said.
@Suite struct ToolIntentArgumentsTests {
    @Test func numbersGoToTheNumberPropertiesInTheOrderSaid() throws {
        let schema = try JSON(parsing: #"{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"},"c":{"type":"integer"}}}"#)
        let arguments = ToolIntent.arguments(for: schema, prompt: "add 2 and 3.5 please", avoiding: ["add"])
        #expect(arguments["a"]?.double == 2 && arguments["b"]?.double == 3.5 && arguments["c"]?.double == 4)
    }
}
