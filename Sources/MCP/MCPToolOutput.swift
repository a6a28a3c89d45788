import JSON

/// What a tool call gave back (server/tools, "Tool Result"), as the text an `mcp_call` item's
/// `output` carries: the text parts joined, each other kind of content described in a line, since
/// a voice session's model reads text only.
public struct MCPToolOutput: Equatable, Sendable {
    public let text: String
    /// The result's `structuredContent`, when the tool gave one.
    public let structured: JSON?

    public init(text: String, structured: JSON? = nil) {
        self.text = text
        self.structured = structured
    }

    /// Reads a `tools/call` result: its output, or `.toolFailed` with the same text when the
    /// result says `isError: true` (a tool's own failure is a result, not a JSON-RPC error).
    static func decode(_ result: JSON) -> Result<MCPToolOutput, MCPError> {
        let structured = result["structuredContent"].flatMap { $0.isNull ? nil : $0 }
        let text: String
        switch result["content"] {
        case .array(let parts)?:
            // A tool with structured output also SHOULD send it as text (server/tools,
            // "Structured Content"); one that sends only the structure is read as its JSON.
            text = parts.isEmpty ? (structured?.description ?? "") : parts.map(describe).joined(separator: "\n")
        case nil, .null?:
            guard let structured else { return .failure(.malformed("the tools/call result has no content")) }
            text = structured.description
        default:
            return .failure(.malformed("the content of the tools/call result is not an array"))
        }
        if result["isError"]?.bool == true {
            return .failure(.toolFailed(text.isEmpty ? "the tool failed and said nothing more" : text))
        }
        return .success(MCPToolOutput(text: text, structured: structured))
    }

    /// One content part as text: text as it is, an embedded text resource as its text, anything
    /// else as a bracketed line naming what it was.
    static func describe(_ part: JSON) -> String {
        let type = part["type"]?.string ?? "unknown"
        switch type {
        case "text":
            return part["text"]?.string ?? ""
        case "image", "audio":
            let mime = part["mimeType"]?.string ?? "unknown type"
            let bytes = (part["data"]?.string?.utf8.count ?? 0) / 4 * 3
            return "[\(type): \(mime), about \(bytes) bytes]"
        case "resource_link":
            let name = part["name"]?.string ?? "unnamed"
            return "[resource link: \(name) \(part["uri"]?.string ?? "")]"
        case "resource":
            let resource = part["resource"]
            if let text = resource?["text"]?.string { return text }
            let mime = resource?["mimeType"]?.string.map { ", \($0)" } ?? ""
            return "[resource: \(resource?["uri"]?.string ?? "no uri")\(mime)]"
        default:
            return "[\(type) content]"
        }
    }
}
