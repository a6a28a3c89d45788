import JSON
import Models
import Loop
import Upstream
import SpeechContracts

/// Any OpenAI-compatible `/audio/speech` endpoint, asked for raw pcm (16-bit mono, 24 kHz), whose
/// body is passed on as it streams in, so a sentence starts playing before it is all synthesised.
/// The request runs on the session's loop.
public struct OpenAISynthesizer: Synthesizer {
    public let name = "openai"
    public let baseURL: UpstreamURL
    public let model: String
    public let apiKey: String?
    static let sampleRate = 24_000

    public init(baseURL: UpstreamURL, model: String, apiKey: String?) {
        apiKey.map(Secrets.register)
        self.baseURL = baseURL
        self.model = model
        self.apiKey = apiKey
    }

    public func speak(_ text: String, voice: SpeechVoice, urgency: SynthesisUrgency, on loop: EventLoop, _ onEvent: @escaping (SynthesisEvent) -> Void) -> any ModelCall {
        var fields: [(String, JSON)] = [("model", .string(model)), ("input", .string(text)), ("voice", .string(voice.name)), ("response_format", .string("pcm"))]
        if voice.speed != 1 { fields.append(("speed", .number(voice.speed))) }
        let body = JSON.object(fields)
        var headers = [("Content-Type", "application/json")]
        if let apiKey { headers.append(("Authorization", "Bearer \(apiKey)")) }
        let request = HTTPClientRequest(method: "POST", url: baseURL.appending("/audio/speech"), headers: headers, body: Array(body.description.utf8))
        var status = 0
        var odd: UInt8?
        var errorBody: [UInt8] = []
        let host = baseURL.host
        let call = loop.httpClient.send(request, onHead: { status = $0.status }, onBody: { bytes in
            guard (200..<300).contains(status) else { errorBody += bytes.prefix(4096 - min(4096, errorBody.count)); return }
            // Samples may straddle two pieces of the body: an odd byte waits for its pair.
            var raw = Array(bytes)
            if let first = odd { raw.insert(first, at: 0); odd = nil }
            if raw.count % 2 == 1 { odd = raw.removeLast() }
            let samples = stride(from: 0, to: raw.count, by: 2).map { Int16(bitPattern: UInt16(raw[$0]) | UInt16(raw[$0 + 1]) << 8) }
            if !samples.isEmpty { onEvent(.audio(samples, sampleRate: Self.sampleRate)) }
        }) { result in
            switch result {
            case .failure(let error):
                onEvent(.failed(ModelError(code: "synthesis_failed", message: "\(host): \(error)")))
            case .success where (200..<300).contains(status):
                onEvent(.finished)
            case .success:
                let message = (try? JSON(parsing: String(decoding: errorBody, as: UTF8.self)))?["error"]?["message"]?.string ?? "HTTP \(status)"
                onEvent(.failed(ModelError(code: "synthesis_failed", message: "\(host): \(message)")))
            }
        }
        return HTTPSynthesisCall(call)
    }
}

final class HTTPSynthesisCall: ModelCall {
    private let call: HTTPClientCall
    init(_ call: HTTPClientCall) { self.call = call }
    func cancel() { call.cancel() }
}
