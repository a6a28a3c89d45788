import ArgumentParser
import Models
import Server
import Session
import Upstream

/// `--llm` and friends: which language model answers, shared by every session.
struct LanguageModelOptions: ParsableArguments {
    @Option(help: "The language model: builtin (offline, the default), openai (any OpenAI-compatible server), anthropic (PARLEY_LLM).")
    var llm = Environment.string("PARLEY_LLM") ?? "builtin"

    @Option(name: .customLong("llm-base-url"), help: "The API's base URL, up to the version, e.g. http://127.0.0.1:11434/v1 for Ollama (PARLEY_LLM_BASE_URL).")
    var baseURLFlag: String?

    @Option(name: .customLong("llm-model"), help: "The model name the API expects (PARLEY_LLM_MODEL).")
    var modelFlag: String?

    @Option(name: .customLong("llm-api-key-env"), help: "The environment variable that holds the API key; default OPENAI_API_KEY or ANTHROPIC_API_KEY (PARLEY_LLM_API_KEY_ENV).")
    var apiKeyEnvFlag: String?

    @Option(name: .customLong("llm-fallback"), help: "A second language model for turns the first cannot answer (retries spent, circuit open): builtin, openai or anthropic (PARLEY_LLM_FALLBACK; default none).")
    var fallbackFlag: String?

    @Option(name: .customLong("llm-fallback-base-url"), help: "The fallback's base URL (PARLEY_LLM_FALLBACK_BASE_URL).")
    var fallbackBaseURLFlag: String?

    @Option(name: .customLong("llm-fallback-model"), help: "The fallback's model name (PARLEY_LLM_FALLBACK_MODEL).")
    var fallbackModelFlag: String?

    @Option(name: .customLong("llm-fallback-api-key-env"), help: "The environment variable holding the fallback's API key (PARLEY_LLM_FALLBACK_API_KEY_ENV; default OPENAI_API_KEY or ANTHROPIC_API_KEY).")
    var fallbackKeyEnvFlag: String?

    @Option(name: .customLong("llm-turn-budget"), help: "Seconds within which a turn's retries (429, 5xx, failed connections, stalls) and the fallback must start (PARLEY_LLM_TURN_BUDGET; default 8).")
    var turnBudgetFlag: Double?

    @Option(name: .customLong("llm-stall-seconds"), help: "A reply that sends nothing for this long is cut and retried or apologised for (PARLEY_LLM_STALL_SECONDS; default 5).")
    var stallFlag: Double?

    @Option(name: .customLong("llm-apology"), help: "Said when every attempt at a turn failed; empty: the response fails with the error instead (PARLEY_LLM_APOLOGY).")
    var apologyFlag: String?

    var llmBaseUrl: String? { baseURLFlag ?? Environment.string("PARLEY_LLM_BASE_URL") }
    var llmModel: String? { modelFlag ?? Environment.string("PARLEY_LLM_MODEL") }
    var llmApiKeyEnv: String? { apiKeyEnvFlag ?? Environment.string("PARLEY_LLM_API_KEY_ENV") }

    var fallback: String? { fallbackFlag ?? Environment.string("PARLEY_LLM_FALLBACK") }

    func validate() throws {
        for (flag, value) in [("--llm", llm), ("--llm-fallback", fallback ?? "builtin")] where !["builtin", "openai", "anthropic"].contains(value) {
            throw ValidationError("\(flag) must be builtin, openai or anthropic")
        }
        _ = try makeModel()
    }

    /// The model sessions use: the configured upstream (and its fallback) behind the fault policy.
    func makeModel() throws -> any LanguageModel {
        let primary = try Self.provider(llm, baseURL: llmBaseUrl, model: modelName, keyEnv: llmApiKeyEnv, flag: "--llm-base-url")
        let second = try fallback.map { provider in
            try Self.provider(provider, baseURL: fallbackBaseURLFlag ?? Environment.string("PARLEY_LLM_FALLBACK_BASE_URL"),
                              model: fallbackModelFlag ?? Environment.string("PARLEY_LLM_FALLBACK_MODEL") ?? Self.defaultModel(provider),
                              keyEnv: fallbackKeyEnvFlag ?? Environment.string("PARLEY_LLM_FALLBACK_API_KEY_ENV"), flag: "--llm-fallback-base-url")
        }
        return ResilientModel(primary: primary, fallback: second, policy: try policy())
    }

    func policy() throws -> UpstreamPolicy {
        var policy = UpstreamPolicy()
        if let budget = turnBudgetFlag ?? Environment.double("PARLEY_LLM_TURN_BUDGET") {
            guard budget > 0, budget <= 120 else { throw ValidationError("--llm-turn-budget must be in (0, 120] seconds") }
            policy.turnBudgetSeconds = budget
        }
        if let stall = stallFlag ?? Environment.double("PARLEY_LLM_STALL_SECONDS") {
            guard stall > 0, stall <= 600 else { throw ValidationError("--llm-stall-seconds must be in (0, 600]") }
            policy.stallSeconds = stall
        }
        if let apology = apologyFlag ?? Environment.string("PARLEY_LLM_APOLOGY") { policy.apology = apology }
        return policy
    }

    private static func provider(_ name: String, baseURL: String?, model: String, keyEnv: String?, flag: String) throws -> any LanguageModel {
        func upstream(_ defaultURL: String, _ keyVariable: String) throws -> (UpstreamURL, String?) {
            let text = baseURL ?? defaultURL
            guard let url = UpstreamURL(text) else { throw ValidationError("\(flag) \(text) is not an http:// or https:// URL") }
            return (url, Environment.string(keyEnv ?? keyVariable))
        }
        switch name {
        case "openai":
            let (url, key) = try upstream("https://api.openai.com/v1", "OPENAI_API_KEY")
            return OpenAIChatModel(baseURL: url, model: model, apiKey: key)
        case "anthropic":
            let (url, key) = try upstream("https://api.anthropic.com/v1", "ANTHROPIC_API_KEY")
            return AnthropicModel(baseURL: url, model: model, apiKey: key)
        default:
            return BuiltinModel()
        }
    }

    static func defaultModel(_ provider: String) -> String {
        switch provider {
        case "openai": "gpt-4o-mini"
        case "anthropic": "claude-3-5-haiku-latest"
        default: "parley-builtin"
        }
    }

    /// The model asked for: the flag, or the provider's default. Sessions report it too.
    var modelName: String { llm == "builtin" ? Self.defaultModel(llm) : llmModel ?? Self.defaultModel(llm) }

    var summary: String {
        (llm == "builtin" ? "builtin agent (offline)" : "\(llm) \(modelName) at \(llmBaseUrl ?? "(default URL)")") + (fallback.map { ", falling back to \($0)" } ?? "")
    }
}
