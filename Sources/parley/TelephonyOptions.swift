import ArgumentParser
import Loop
import Session
import Telephony

/// Phone calls through Twilio Media Streams: where they connect, what the agent says and is told,
/// and the auth token their signatures are checked with.
struct TelephonyOptions: ParsableArguments {
    @Option(name: .customLong("twilio-path"), help: ArgumentHelp("The Media Streams endpoint's path, the <Stream url> of your TwiML (PARLEY_TWILIO_PATH; default /twilio).", valueName: "path"))
    var pathFlag: String?

    @Option(name: .customLong("twilio-auth-token-file"), help: ArgumentHelp("A file holding your Twilio auth token: upgrades without a matching X-Twilio-Signature get 403 (TWILIO_AUTH_TOKEN or PARLEY_TWILIO_AUTH_TOKEN hold the token itself).", valueName: "file"))
    var authTokenFile: String?

    @Option(name: .customLong("twilio-public-url"), help: ArgumentHelp("The scheme and host Twilio connects to (wss://voice.example.com), when a proxy in front changes them; signatures cover it (PARLEY_TWILIO_PUBLIC_URL; default wss:// and the Host header).", valueName: "url"))
    var publicURLFlag: String?

    @Option(name: .customLong("twilio-instructions"), help: ArgumentHelp("The agent's instructions for calls (PARLEY_TWILIO_INSTRUCTIONS; a call's <Parameter name=\"instructions\"> overrides).", valueName: "text"))
    var instructionsFlag: String?

    @Option(name: .customLong("twilio-greeting"), help: ArgumentHelp("Said when a call starts (PARLEY_TWILIO_GREETING; <Parameter name=\"greeting\">); default: none, the caller speaks first.", valueName: "text"))
    var greetingFlag: String?

    @Option(name: .customLong("twilio-voice"), help: ArgumentHelp("The voice replies are spoken in (PARLEY_TWILIO_VOICE; <Parameter name=\"voice\">).", valueName: "voice"))
    var voiceFlag: String?

    func settings() throws -> TwilioEndpoint.Settings {
        var settings = TwilioEndpoint.Settings()
        if let path = pathFlag ?? Environment.string("PARLEY_TWILIO_PATH") {
            guard path.hasPrefix("/"), !path.contains("?") else { throw ValidationError("--twilio-path must be a path starting with /, got \(path)") }
            settings.path = path
        }
        if let file = authTokenFile {
            guard let bytes = Sys.readFile(file) else { throw ValidationError("--twilio-auth-token-file: cannot read \(file)") }
            // A token pasted into a file usually ends with a newline that is not part of it.
            let line = String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isNewline).first ?? ""
            settings.authToken = Array(line.trimmingSpaces().utf8)
        } else if let token = Environment.string("TWILIO_AUTH_TOKEN") ?? Environment.string("PARLEY_TWILIO_AUTH_TOKEN"), !token.isEmpty {
            settings.authToken = Array(token.utf8)
        }
        settings.publicURL = publicURLFlag ?? Environment.string("PARLEY_TWILIO_PUBLIC_URL")
        if let instructions = instructionsFlag ?? Environment.string("PARLEY_TWILIO_INSTRUCTIONS") { settings.instructions = instructions }
        if let greeting = greetingFlag ?? Environment.string("PARLEY_TWILIO_GREETING") { settings.greeting = greeting }
        if let voice = voiceFlag ?? Environment.string("PARLEY_TWILIO_VOICE") { settings.voice = voice }
        return settings
    }
}
