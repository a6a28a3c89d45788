import ArgumentParser
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

    var llmBaseUrl: String? { baseURLFlag ?? Environment.string("PARLEY_LLM_BASE_URL") }
    var llmModel: String? { modelFlag ?? Environment.string("PARLEY_LLM_MODEL") }
    var llmApiKeyEnv: String? { apiKeyEnvFlag ?? Environment.string("PARLEY_LLM_API_KEY_ENV") }

    func validate() throws {
        guard ["builtin", "openai", "anthropic"].contains(llm) else { throw ValidationError("--llm must be builtin, openai or anthropic") }
        _ = try makeModel()
    }

    func makeModel() throws -> any LanguageModel {
        switch llm {
        case "openai":
            let (url, key) = try upstream(defaultURL: "https://api.openai.com/v1", keyVariable: "OPENAI_API_KEY")
            return OpenAIChatModel(baseURL: url, model: modelName, apiKey: key)
        case "anthropic":
            let (url, key) = try upstream(defaultURL: "https://api.anthropic.com/v1", keyVariable: "ANTHROPIC_API_KEY")
            return AnthropicModel(baseURL: url, model: modelName, apiKey: key)
        default:
            return BuiltinModel()
        }
    }

    private func upstream(defaultURL: String, keyVariable: String) throws -> (UpstreamURL, String?) {
        let text = llmBaseUrl ?? defaultURL
        guard let url = UpstreamURL(text) else { throw ValidationError("--llm-base-url \(text) is not an http:// or https:// URL") }
        return (url, Environment.string(llmApiKeyEnv ?? keyVariable))
    }

    /// The model asked for: the flag, or the provider's default. Sessions report it too.
    var modelName: String {
        switch llm {
        case "openai": llmModel ?? "gpt-4o-mini"
        case "anthropic": llmModel ?? "claude-3-5-haiku-latest"
        default: "parley-builtin"
        }
    }

    var summary: String {
        llm == "builtin" ? "builtin agent (offline)" : "\(llm) \(modelName) at \(llmBaseUrl ?? "(default URL)")"
    }
}
