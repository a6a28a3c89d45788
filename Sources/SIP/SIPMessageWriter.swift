extension SIPMessage {
    /// The message as canonical text: the start line, each field on its own line under its
    /// canonical name, Content-Length (always, the body's length: a stream needs it, section
    /// 18.3), the empty line and the body. What `SIPMessageParser` read writes back to bytes that
    /// read the same.
    package func encoded() -> [UInt8] {
        var text: String
        switch startLine {
        case .request(let method, let uri): text = "\(method) \(uri) SIP/2.0\r\n"
        case .response(let status, let reason): text = "SIP/2.0 \(status) \(reason)\r\n"
        }
        for header in headers { text += "\(header.name): \(header.value)\r\n" }
        text += "Content-Length: \(body.count)\r\n\r\n"
        var bytes = Array(text.utf8)
        bytes += body
        return bytes
    }
}
