@testable import Server

/// A `multipart/form-data` body as `POST /v1/realtime/calls` takes an offer with its session. The
/// input's first line is the request's Content-Type; the rest is the body. Checks that a body that
/// splits has between one and `maxParts` parts whose contents fit, together, in the body, that the
/// first part of each name is the one found by name, and that a refusal can be described.
enum MultipartFuzz {
    static func run(_ input: UnsafeRawBufferPointer) {
        let bytes = Array(input)
        let lineEnd = bytes.firstIndex(of: 0x0A) ?? bytes.count
        let contentType = String(decoding: bytes[..<lineEnd], as: UTF8.self)
        let body = lineEnd < bytes.count ? Array(bytes[(lineEnd + 1)...]) : []
        do {
            let form = try MultipartFormData(body: body, contentType: contentType)
            precondition((1...MultipartFormData.maxParts).contains(form.parts.count), "\(form.parts.count) parts")
            precondition(form.parts.reduce(0) { $0 + $1.body.count } <= body.count, "the parts hold more than the body")
            for part in form.parts {
                precondition(form.part(named: part.name) == form.parts.first { $0.name == part.name })
            }
        } catch {
            precondition(!error.description.isEmpty)
        }
    }
}
