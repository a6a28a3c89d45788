/// The session's language told to the model with its instructions, so that an upstream model
/// answers in it (issue 75): a session that set Spanish, or whose first turn was found to be, gets
/// "The user speaks Spanish (es); answer in Spanish." after the client's instructions. English,
/// or no language known, adds nothing: the instructions go as the client wrote them.
enum LanguageInstruction {
    /// English names of the languages Whisper hears best and the issue names; another code is
    /// given as a code, which models read as well.
    static let names = ["es": "Spanish", "de": "German", "fr": "French", "it": "Italian", "pt": "Portuguese", "nl": "Dutch",
                        "pl": "Polish", "sv": "Swedish", "da": "Danish", "no": "Norwegian", "fi": "Finnish", "ca": "Catalan",
                        "ru": "Russian", "uk": "Ukrainian", "tr": "Turkish", "ar": "Arabic", "hi": "Hindi", "ja": "Japanese",
                        "ko": "Korean", "zh": "Chinese", "el": "Greek", "cs": "Czech", "ro": "Romanian", "hu": "Hungarian"]

    static func appended(to instructions: String, language: String?) -> String {
        guard let language, language != "en" else { return instructions }
        let said = names[language].map { "The user speaks \($0) (\(language)); answer in \($0)." }
            ?? "The user speaks the language whose ISO-639-1 code is \(language); answer in that language."
        return instructions.isEmpty ? said : instructions + "\n\n" + said
    }
}
