/// A SIP request or response as a value (RFC 3261 section 7): the start line, the header fields in
/// the order they came (each list element its own field, see `SIPHeader`), and the body bytes.
///
/// Content-Length is not among the fields: on reading it frames the body and is checked, and on
/// writing it is always the body's length, so a message cannot disagree with itself.
package struct SIPMessage: Sendable, Equatable {
    package enum StartLine: Sendable, Equatable {
        case request(method: String, uri: SIPURI)
        case response(status: Int, reason: String)
    }

    package var startLine: StartLine
    package var headers: [SIPHeader]
    package var body: [UInt8]

    package init(_ startLine: StartLine, headers: [SIPHeader] = [], body: [UInt8] = []) {
        self.startLine = startLine
        self.headers = headers
        self.body = body
    }

    package var isRequest: Bool {
        if case .request = startLine { true } else { false }
    }

    /// The request's method (case-sensitive, section 7.1); nil for a response.
    package var method: String? {
        if case .request(let method, _) = startLine { method } else { nil }
    }

    package var requestURI: SIPURI? {
        if case .request(_, let uri) = startLine { uri } else { nil }
    }

    /// The response's status code; nil for a request.
    package var status: Int? {
        if case .response(let status, _) = startLine { status } else { nil }
    }

    /// Every value of the header `name` (any spelling or compact form), in order.
    package func values(_ name: String) -> [String] {
        let canonical = SIPHeaderName.canonical(name)
        return headers.compactMap { $0.name == canonical ? $0.value : nil }
    }

    /// The first value of the header `name`.
    package func value(_ name: String) -> String? {
        let canonical = SIPHeaderName.canonical(name)
        return headers.first { $0.name == canonical }?.value
    }

    /// Appends a field (a list header's value split into its elements, as when parsed).
    package mutating func add(_ name: String, _ value: String) {
        let canonical = SIPHeaderName.canonical(name)
        guard canonical != "Content-Length" else { return }
        let elements = SIPHeaderName.lists.contains(canonical) ? SIPHeaderName.splitList(value) : [value]
        headers += elements.map { SIPHeader(canonical, $0) }
    }

    /// Replaces every field of `name` with one of `value`, where the first was (else at the end).
    package mutating func set(_ name: String, _ value: String) {
        let canonical = SIPHeaderName.canonical(name)
        if let first = headers.firstIndex(where: { $0.name == canonical }) {
            headers[first].value = value
            var i = headers.count - 1
            while i > first {
                if headers[i].name == canonical { headers.remove(at: i) }
                i -= 1
            }
        } else {
            add(canonical, value)
        }
    }

    package mutating func remove(_ name: String) {
        let canonical = SIPHeaderName.canonical(name)
        headers.removeAll { $0.name == canonical }
    }
}
