import ArgumentParser
import JSON
import Loop
import Session
import Telephony
import SessionEngine

/// Phone calls through Twilio Media Streams: where they connect, what the agent says and is told,
/// and the auth token their signatures are checked with.
struct TelephonyOptions: ParsableArguments {
    enum Settings {
        static let path = Setting<String>("--twilio-path", "PARLEY_TWILIO_PATH", default: TwilioEndpoint.Settings().path, shown: "/twilio", valueName: "path",
                                          about: "The Media Streams endpoint's path, the <Stream url> of your TwiML") { text throws(SettingRejection) in
            guard text.hasPrefix("/"), !text.contains("?") else { throw SettingRejection("is not a path starting with / (without a query)") }
            return text
        }
        static let publicURL = Setting.text("--twilio-public-url", "PARLEY_TWILIO_PUBLIC_URL", shown: "wss:// and the Host header", valueName: "url",
                                            about: "The scheme and host Twilio connects to (wss://voice.example.com), when a proxy in front changes them; signatures cover it")
        static let instructions = Setting.text("--twilio-instructions", "PARLEY_TWILIO_INSTRUCTIONS", valueName: "text",
                                               about: "The agent's instructions for calls (a call's <Parameter name=\"instructions\"> overrides)")
        static let greeting = Setting.text("--twilio-greeting", "PARLEY_TWILIO_GREETING", shown: "none, the caller speaks first", valueName: "text",
                                           about: "Said when a call starts (<Parameter name=\"greeting\">)")
        static let session = Setting.text("--twilio-session", "PARLEY_TWILIO_SESSION", valueName: "file",
                                          about: "A JSON file holding a session object, as session.update sends it (tools and MCP servers, tool_choice, instructions), that every call starts with")
        static let voice = Setting.text("--twilio-voice", "PARLEY_TWILIO_VOICE", default: TwilioEndpoint.Settings().voice, valueName: "voice",
                                        about: "The voice replies are spoken in (<Parameter name=\"voice\">)")
    }

    @Option(Settings.path) var path: String?

    // The token's file is a flag and the token itself a variable (two of them): a flag's value would
    // show in the process list.
    @Option(name: .customLong("twilio-auth-token-file"), help: ArgumentHelp("A file holding your Twilio auth token: upgrades without a matching X-Twilio-Signature get 403 (TWILIO_AUTH_TOKEN or PARLEY_TWILIO_AUTH_TOKEN hold the token itself).", valueName: "file"))
    var authTokenFile: String?

    @Option(Settings.publicURL) var publicURL: String?
    @Option(Settings.instructions) var instructions: String?
    @Option(Settings.greeting) var greeting: String?
    @Option(Settings.voice) var voice: String?
    @Option(Settings.session) var session: String?

    /// A session object in a file (`--twilio-session`, `--sip-session`): refused at start, with the
    /// setting's names, when it cannot be read, is not JSON, or is not a session `session.update` takes.
    static func sessionFile(_ file: String, _ setting: Setting<String?>) throws -> SessionUpdate {
        guard let bytes = Sys.readFile(file) else { throw SettingError.unreadable(setting.flag, file) }
        do {
            return try SessionUpdate.parse(session: try JSON(parsing: String(decoding: bytes, as: UTF8.self)))
        } catch let error as ProtocolError {
            throw setting.refuse(file, "is not a usable session: \(error.message)")
        } catch {
            throw setting.refuse(file, "is not JSON: \(error)")
        }
    }

    func settings() throws -> TwilioEndpoint.Settings {
        var settings = TwilioEndpoint.Settings()
        settings.path = try Settings.path.read(path)
        if let file = authTokenFile {
            guard let bytes = Sys.readFile(file) else { throw SettingError.unreadable("--twilio-auth-token-file", file) }
            // A token pasted into a file usually ends with a newline that is not part of it.
            let line = String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isNewline).first ?? ""
            settings.authToken = Array(line.trimmingSpaces().utf8)
        } else if let token = Environment.string("TWILIO_AUTH_TOKEN") ?? Environment.string("PARLEY_TWILIO_AUTH_TOKEN"), !token.isEmpty {
            settings.authToken = Array(token.utf8)
        }
        settings.publicURL = try Settings.publicURL.read(publicURL)
        if let instructions = try Settings.instructions.read(instructions) { settings.instructions = instructions }
        if let greeting = try Settings.greeting.read(greeting) { settings.greeting = greeting }
        settings.voice = try Settings.voice.read(voice)
        if let file = try Settings.session.read(session) { settings.session = try Self.sessionFile(file, Settings.session) }
        return settings
    }
}
