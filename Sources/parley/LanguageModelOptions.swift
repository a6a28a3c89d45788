import ArgumentParser
import Models
import Server
import Session
import Upstream

/// A language model `--llm` or `--llm-fallback` can name: one row of `LanguageModelProvider.all`.
struct LanguageModelProvider: Sendable {
    /// Where a hosted model is reached unless told otherwise.
    struct Upstream: Sendable {
        let baseURL: String
        /// The environment variable that holds the key, unless `--llm-api-key-env` names another.
        let keyVariable: String
    }

    /// What `build` is given for a hosted model.
    struct Endpoint {
        let url: UpstreamURL
        let model: String
        let apiKey: String?
    }

    /// How it is built: offline from nothing, or hosted from where and as what it is reached.
    enum Build: Sendable {
        case offline(@Sendable () -> any LanguageModel)
        case hosted(Upstream, @Sendable (Endpoint) -> any LanguageModel)
    }

    let name: String
    /// For `--help`: what it is.
    let about: String
    let defaultModel: String
    let build: Build

    /// nil for an offline model, which takes no URL, model name or key.
    var upstream: Upstream? { if case .hosted(let upstream, _) = build { upstream } else { nil } }

    /// Every provider, the default first.
    static let all: [LanguageModelProvider] = [
        LanguageModelProvider(name: "builtin", about: "offline", defaultModel: "parley-builtin", build: .offline { BuiltinModel() }),
        LanguageModelProvider(name: "openai", about: "any OpenAI-compatible server", defaultModel: "gpt-4o-mini",
                              build: .hosted(Upstream(baseURL: "https://api.openai.com/v1", keyVariable: "OPENAI_API_KEY")) {
                                  OpenAIChatModel(baseURL: $0.url, model: $0.model, apiKey: $0.apiKey)
                              }),
        LanguageModelProvider(name: "anthropic", about: "the Messages API", defaultModel: "claude-3-5-haiku-latest",
                              build: .hosted(Upstream(baseURL: "https://api.anthropic.com/v1", keyVariable: "ANTHROPIC_API_KEY")) {
                                  AnthropicModel(baseURL: $0.url, model: $0.model, apiKey: $0.apiKey)
                              }),
    ]

    static var choices: [(name: String, value: LanguageModelProvider)] { all.map { ($0.name, $0) } }
}

/// `--llm` and friends: which language model answers, shared by every session.
struct LanguageModelOptions: ParsableArguments {
    enum Settings {
        private static let names = LanguageModelProvider.all.map(\.name).joined(separator: ", ")
        private static let described = LanguageModelProvider.all.map { "\($0.name) (\($0.about))" }.joined(separator: ", ")

        static let llm = Setting<LanguageModelProvider>.choice("--llm", "PARLEY_LLM", default: LanguageModelProvider.all[0], shown: LanguageModelProvider.all[0].name,
                                                                among: LanguageModelProvider.choices,
                                                                about: "The language model: \(described)")
        static let baseURL = Setting.text("--llm-base-url", "PARLEY_LLM_BASE_URL",
                                          about: "The API's base URL, up to the version, e.g. http://127.0.0.1:11434/v1 for Ollama")
        static let model = Setting.text("--llm-model", "PARLEY_LLM_MODEL", about: "The model name the API expects")
        static let apiKeyEnv = Setting.text("--llm-api-key-env", "PARLEY_LLM_API_KEY_ENV", shown: "OPENAI_API_KEY or ANTHROPIC_API_KEY",
                                            about: "The environment variable that holds the API key")
        static let fallback = Setting<LanguageModelProvider?>.choice("--llm-fallback", "PARLEY_LLM_FALLBACK", default: nil, shown: "none",
                                                                     among: LanguageModelProvider.choices.map { ($0.name, Optional($0.value)) },
                                                                     about: "A second language model for turns the first cannot answer (retries spent, circuit open): \(names)")
        static let fallbackBaseURL = Setting.text("--llm-fallback-base-url", "PARLEY_LLM_FALLBACK_BASE_URL", about: "The fallback's base URL")
        static let fallbackModel = Setting.text("--llm-fallback-model", "PARLEY_LLM_FALLBACK_MODEL", about: "The fallback's model name")
        static let fallbackAPIKeyEnv = Setting.text("--llm-fallback-api-key-env", "PARLEY_LLM_FALLBACK_API_KEY_ENV", shown: "OPENAI_API_KEY or ANTHROPIC_API_KEY",
                                                    about: "The environment variable holding the fallback's API key")
        static let turnBudget = Setting.number("--llm-turn-budget", "PARLEY_LLM_TURN_BUDGET", default: UpstreamPolicy().turnBudgetSeconds,
                                               in: Above(lower: 0, upper: 120),
                                               about: "Seconds within which a turn's retries (429, 5xx, failed connections, stalls) and the fallback must start")
        static let stallSeconds = Setting.number("--llm-stall-seconds", "PARLEY_LLM_STALL_SECONDS", default: UpstreamPolicy().stallSeconds,
                                                 in: Above(lower: 0, upper: 600),
                                                 about: "A reply that sends nothing for this long is cut and retried or apologised for")
        static let apology = Setting.text("--llm-apology", "PARLEY_LLM_APOLOGY", default: UpstreamPolicy().apology, shown: "a short apology",
                                          about: "Said when every attempt at a turn failed; empty: the response fails with the error instead")
    }

    @Option(Settings.llm) var llm: String?
    @Option(Settings.baseURL) var baseURL: String?
    @Option(Settings.model) var model: String?
    @Option(Settings.apiKeyEnv) var apiKeyEnv: String?
    @Option(Settings.fallback) var fallback: String?
    @Option(Settings.fallbackBaseURL) var fallbackBaseURL: String?
    @Option(Settings.fallbackModel) var fallbackModel: String?
    @Option(Settings.fallbackAPIKeyEnv) var fallbackAPIKeyEnv: String?
    @Option(Settings.turnBudget) var turnBudget: String?
    @Option(Settings.stallSeconds) var stallSeconds: String?
    @Option(Settings.apology) var apology: String?

    /// One model as the settings describe it: its provider, and where and as what it is reached.
    struct Choice {
        let provider: LanguageModelProvider
        let baseURL: String?
        /// The model asked for: the flag, or the provider's default (an offline one has only its own).
        let model: String
        /// Builds it, with the endpoint settled.
        let build: () -> any LanguageModel

        init(_ provider: LanguageModelProvider, baseURL: String?, model: String?, keyVariable: String?, urlSetting: Setting<String?>) throws(SettingError) {
            self.provider = provider
            self.baseURL = baseURL
            self.model = provider.upstream == nil ? provider.defaultModel : model ?? provider.defaultModel
            switch provider.build {
            case .offline(let make):
                build = make
            case .hosted(let upstream, let make):
                let text = baseURL ?? upstream.baseURL
                guard let url = UpstreamURL(text) else { throw urlSetting.refuse(text, "is not an http:// or https:// URL") }
                let endpoint = LanguageModelProvider.Endpoint(url: url, model: self.model, apiKey: Environment.string(keyVariable ?? upstream.keyVariable))
                build = { make(endpoint) }
            }
        }
    }

    /// What the flags and the environment ask for: the model, its fallback if any, and the policy between them.
    func choice() throws(SettingError) -> (primary: Choice, fallback: Choice?, policy: UpstreamPolicy) {
        let primary = try Choice(try Settings.llm.read(llm), baseURL: try Settings.baseURL.read(baseURL), model: try Settings.model.read(model),
                                 keyVariable: try Settings.apiKeyEnv.read(apiKeyEnv), urlSetting: Settings.baseURL)
        let second = try Settings.fallback.read(fallback).map { provider throws(SettingError) in
            try Choice(provider, baseURL: try Settings.fallbackBaseURL.read(fallbackBaseURL), model: try Settings.fallbackModel.read(fallbackModel),
                       keyVariable: try Settings.fallbackAPIKeyEnv.read(fallbackAPIKeyEnv), urlSetting: Settings.fallbackBaseURL)
        }
        return (primary, second, try policy())
    }

    private func policy() throws(SettingError) -> UpstreamPolicy {
        var policy = UpstreamPolicy()
        policy.turnBudgetSeconds = try Settings.turnBudget.read(turnBudget)
        policy.stallSeconds = try Settings.stallSeconds.read(stallSeconds)
        policy.apology = try Settings.apology.read(apology)
        return policy
    }

    /// For the listening line.
    static func summary(_ primary: Choice, _ fallback: Choice?) -> String {
        (primary.provider.upstream == nil ? "\(primary.provider.name) agent (offline)" : "\(primary.provider.name) \(primary.model) at \(primary.baseURL ?? "(default URL)")")
            + (fallback.map { ", falling back to \($0.provider.name)" } ?? "")
    }
}
