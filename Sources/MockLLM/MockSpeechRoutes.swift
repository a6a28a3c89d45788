import Loop
import Codec
import JSON
import Server
#if canImport(Glibc)
import Glibc
#endif

/// `parley mock-llm`'s speech routes, OpenAI-compatible, for tests of the `openai` speech
/// providers without a paid API:
///
/// - `POST /v1/audio/transcriptions` takes a multipart upload with a `file` part (a WAV file) and a
///   `model` field and answers `{"text": …}` with the configured transcript; a missing or
///   unreadable file is a 400 with an OpenAI-style error.
/// - `POST /v1/audio/speech` takes `{"model", "input", "voice", "response_format": "pcm"}` and
///   streams 16-bit mono PCM at 24 kHz: a voiced hum, 0.3 s a word, so its length follows the text.
public enum MockSpeechRoutes {
    public static func install(on routes: inout Router.Builder, transcript: String) {
        routes.post("/v1/audio/transcriptions") { request in
            guard let boundary = Multipart.boundary(request.header("content-type") ?? "") else {
                return error(.badRequest, "expected multipart/form-data with a boundary")
            }
            let parts = Multipart.parts(request.body, boundary: boundary)
            guard let file = parts.first(where: { $0.name == "file" })?.body else { return error(.badRequest, "no 'file' part") }
            guard let wav = try? WAVFile(bytes: file) else { return error(.badRequest, "the 'file' part is not a WAV file") }
            guard parts.contains(where: { $0.name == "model" }) else { return error(.badRequest, "no 'model' field") }
            let text = wav.samples.isEmpty ? "" : transcript
            return HTTPResponse(status: .ok, contentType: "application/json", body: JSON.object([("text", .string(text))]).description)
        }
        routes.stream("POST", "/v1/audio/speech") { request, stream in
            guard let body = try? JSON(parsing: String(decoding: request.body, as: UTF8.self)), let input = body["input"]?.string else {
                return respond(stream, error(.badRequest, "the body must be JSON with an 'input' string"))
            }
            guard body["response_format"]?.string == "pcm" else {
                return respond(stream, error(.badRequest, "this mock speaks response_format 'pcm' only"))
            }
            let pcm = hum(words: input.split(separator: " ").count)
            stream.start(.ok, headers: [("Content-Type", "audio/pcm")])
            // In 100 ms pieces, as a streaming speech API sends them.
            var offset = 0
            func next() {
                guard stream.isOpen else { return }
                guard offset < pcm.count else { return stream.end() }
                let end = min(pcm.count, offset + 4_800)
                stream.write(Array(pcm[offset..<end]))
                offset = end
                stream.loop.schedule(after: 0.002) { next() }
            }
            next()
        }
    }

    /// A hum at about 140 Hz with a syllable envelope: speech-like in level and length.
    static func hum(words: Int) -> [UInt8] {
        let samples = max(1, words) * 7_200
        var out: [Int16] = []
        out.reserveCapacity(samples)
        for i in 0..<samples {
            let t = Double(i) / 24_000
            let envelope = 0.5 - 0.5 * cos(2 * Double.pi * t / 0.3)
            out.append(Int16(8_000 * envelope * sin(2 * Double.pi * 140 * t)))
        }
        return PCM.littleEndianBytes(out)
    }

    static func respond(_ stream: HTTPResponseStream, _ response: HTTPResponse) {
        stream.start(response.status, headers: response.headers)
        stream.write(response.body)
        stream.end()
    }

    static func error(_ status: HTTPStatus, _ message: String) -> HTTPResponse {
        HTTPResponse(status: status, contentType: "application/json",
                     body: JSON.object([("error", .object([("message", .string(message)), ("type", .string("invalid_request_error"))]))]).description)
    }
}
