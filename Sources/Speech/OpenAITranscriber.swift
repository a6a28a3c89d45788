import Codec
import JSON
import Models
import Loop
import Upstream
import SpeechContracts

/// Any OpenAI-compatible `/audio/transcriptions` endpoint (OpenAI's, a local whisper server,
/// `parley mock-llm`): the turn's audio is kept while the user speaks and uploaded whole, as a
/// WAV in a multipart form, when the turn ends. No partials: the API gives one text. The WAV is at
/// the session's rate, 16 kHz or, from G.711, 8 kHz as it came: the API resamples what it needs,
/// and upsampling here would only double the upload. The request runs on the session's loop,
/// like the model's.
public struct OpenAITranscriber: Transcriber {
    public let name = "openai"
    public let baseURL: UpstreamURL
    public let model: String
    public let apiKey: String?
    /// The most audio one turn uploads; the rest is dropped (the server's input buffer keeps 30 s).
    static let maxSeconds = 30

    public init(baseURL: UpstreamURL, model: String, apiKey: String?) {
        apiKey.map(Secrets.register)
        self.baseURL = baseURL
        self.model = model
        self.apiKey = apiKey
    }

    /// A session's model goes upstream as it named it (the API's own names are the ones it knows);
    /// none named, the server's (`--transcription-model`).
    public func model(for choice: TranscriptionChoice) -> String { choice.model ?? model }

    public func begin(on loop: EventLoop, sampleRate: Int, choice: TranscriptionChoice, _ onEvent: @escaping (TranscriptionEvent) -> Void) -> any TranscriptionSession {
        UploadTranscription(transcriber: self, choice: choice, loop: loop, sampleRate: sampleRate, onEvent: onEvent)
    }

    /// The request for `samples`: a multipart form with the WAV file, the model's name and the
    /// session's language when it set one.
    func request(_ samples: [Int16], sampleRate: Int, choice: TranscriptionChoice) -> HTTPClientRequest {
        let boundary = "parley-\(samples.count)-\(MonotonicClock.nanoseconds())"
        var body: [UInt8] = []
        func field(_ name: String, _ value: String) {
            body += Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"\r\n\r\n\(value)\r\n".utf8)
        }
        field("model", model(for: choice))
        if let language = choice.language { field("language", language) }
        field("response_format", "json")
        body += Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"turn.wav\"\r\nContent-Type: audio/wav\r\n\r\n".utf8)
        body += WAVFile(sampleRate: sampleRate, channels: 1, samples: samples).encoded()
        body += Array("\r\n--\(boundary)--\r\n".utf8)
        var headers = [("Content-Type", "multipart/form-data; boundary=\(boundary)"), ("Accept", "application/json")]
        if let apiKey { headers.append(("Authorization", "Bearer \(apiKey)")) }
        return HTTPClientRequest(method: "POST", url: baseURL.appending("/audio/transcriptions"), headers: headers, body: body)
    }
}

/// One turn: audio gathered on the loop, one upload at `finish`.
private final class UploadTranscription: TranscriptionSession {
    private let transcriber: OpenAITranscriber
    private let choice: TranscriptionChoice
    private let loop: EventLoop
    private let onEvent: (TranscriptionEvent) -> Void
    private let sampleRate: Int
    private var samples: [Int16] = []
    private var call: HTTPClientCall?
    private var over = false

    init(transcriber: OpenAITranscriber, choice: TranscriptionChoice, loop: EventLoop, sampleRate: Int, onEvent: @escaping (TranscriptionEvent) -> Void) {
        self.transcriber = transcriber
        self.choice = choice
        self.loop = loop
        self.sampleRate = sampleRate
        self.onEvent = onEvent
    }

    func append(_ new: [Int16]) {
        guard !over, call == nil else { return }
        samples += new.prefix(max(0, OpenAITranscriber.maxSeconds * sampleRate - samples.count))
    }

    func finish() {
        guard !over, call == nil else { return }
        var status = 0
        var response: [UInt8] = []
        let started = MonotonicClock.nanoseconds(), seconds = Double(samples.count) / Double(sampleRate)
        call = loop.httpClient.send(transcriber.request(samples, sampleRate: sampleRate, choice: choice), onHead: { status = $0.status }, onBody: { response += $0 }) { [weak self] result in
            guard let self, !over else { return }
            over = true
            switch result {
            case .failure(let error):
                onEvent(.failed(ModelError(code: "transcription_failed", message: "\(transcriber.baseURL.host): \(error)")))
            case .success:
                let json = try? JSON(parsing: String(decoding: response, as: UTF8.self))
                if (200..<300).contains(status), let text = json?["text"]?.string {
                    if seconds > 0 { SpeechMetrics.shared.recognitionRealTimeFactor.observe(seconds: Double(MonotonicClock.nanoseconds() &- started) / 1e9 / seconds) }
                    onEvent(.final(text))
                } else {
                    let message = json?["error"]?["message"]?.string ?? "HTTP \(status)"
                    onEvent(.failed(ModelError(code: "transcription_failed", message: "\(transcriber.baseURL.host): \(message)")))
                }
            }
        }
        samples = []
    }

    func cancel() {
        over = true
        call?.cancel()
        samples = []
    }
}
