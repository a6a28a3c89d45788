/// How many tokens of conversation a known model reads, so that a session's history is counted
/// against the model that will read it (`ConversationHistory.Budget.maxTokens`). Unknown models
/// (the built-in agent, a local server's) have no entry: the history's byte budget alone bounds them.
public enum ModelContext {
    /// The model's context window less its longest output, by the name's prefix; nil when unknown.
    public static func inputTokens(model: String) -> Int? {
        for (prefix, tokens) in known where model.hasPrefix(prefix) { return tokens }
        return nil
    }

    /// Most specific first. The Realtime models: OpenAI's truncation reference, "a 32k context
    /// model with 4,096 max output tokens can only include 28,224 tokens in the context". The
    /// chat models: 128,000 (GPT-4o) and 1,047,576 (GPT-4.1) tokens of context less their
    /// longest outputs (16,384 and 32,768), from OpenAI's model pages.
    static let known: [(prefix: String, tokens: Int)] = [
        ("gpt-realtime", 28_224),
        ("gpt-4o-realtime", 28_224),
        ("gpt-4o-mini-realtime", 28_224),
        ("gpt-4o", 111_616),
        ("gpt-4.1", 1_014_808),
    ]
}
