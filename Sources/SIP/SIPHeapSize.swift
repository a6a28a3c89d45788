import Loop

/// What a parsed message keeps on the heap, by `HeapSize`'s rules (`Loop`, the one import this
/// module takes from it): its header array, each name and value, the start line's strings and the
/// body. A call keeps its INVITE, and its last answer until acknowledged, for the dialog's life.
extension SIPMessage {
    package var heapBytes: Int {
        let start = switch startLine {
        case .request(let method, let uri): HeapSize.of(method) + uri.heapBytes
        case .response(_, let reason): HeapSize.of(reason)
        }
        return start + HeapSize.of(headers) + headers.reduce(0) { $0 + HeapSize.of($1.name) + HeapSize.of($1.value) } + HeapSize.of(body)
    }
}

extension SIPURI {
    package var heapBytes: Int {
        (user.map(HeapSize.of) ?? 0) + (password.map(HeapSize.of) ?? 0) + HeapSize.of(host) + HeapSize.of(parameters) + HeapSize.of(headers)
            + parameters.reduce(0) { $0 + $1.heapBytes } + headers.reduce(0) { $0 + $1.heapBytes }
    }
}

extension SIPParameter {
    package var heapBytes: Int { HeapSize.of(name) + (value.map(HeapSize.of) ?? 0) }
}
