import Loop
import Models
import SpeechContracts

/// A synthesiser of English voices (Piper's joe) with espeak-ng for every other language: a reply
/// in a session whose language is not English (set, or found from its turns) is spoken by
/// espeak-ng's voice of that language, since joe would read Spanish as English sounds; an English
/// one by the English voice, as before; a sentence the model wrote in another language than the
/// session's, by that one's. The only multilingual voices packaged here are espeak-ng's (issue 75).
public struct LanguageVoices: Synthesizer {
    public let english: any Synthesizer
    public let others: EspeakSynthesizer
    public var name: String { english.name }

    public init(english: any Synthesizer, others: EspeakSynthesizer) {
        self.english = english
        self.others = others
    }

    /// A sentence plainly in another language than the session's (`TextLanguage`) is spoken by
    /// that language's voice: the model answered it in another one.
    public func speak(_ text: String, voice: SpeechVoice, urgency: SynthesisUrgency, on loop: EventLoop, _ onEvent: @escaping (SynthesisEvent) -> Void) -> any ModelCall {
        var voice = voice
        if let written = TextLanguage.plainly(text, current: voice.language) { voice.language = written }
        return (voice.foreign ? others : english).speak(text, voice: voice, urgency: urgency, on: loop, onEvent)
    }
}
