import Loop

/// Just enough of multipart/form-data (RFC 7578) to read an upload: parts by name.
enum Multipart {
    struct Part {
        let name: String
        let body: [UInt8]
    }

    static func boundary(_ contentType: String) -> String? {
        guard contentType.lowercased().hasPrefix("multipart/form-data") else { return nil }
        for parameter in contentType.split(separator: ";").dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingSpaces() }
            if pair.count == 2, pair[0].lowercased() == "boundary" { return String(pair[1].trimmingCharacters("\"")) }
        }
        return nil
    }

    static func parts(_ body: [UInt8], boundary: String) -> [Part] {
        let delimiter = Array("--\(boundary)".utf8)
        var out: [Part] = []
        var starts: [Int] = []
        var i = 0
        while let found = find(delimiter, in: body, from: i) {
            starts.append(found)
            i = found + delimiter.count
        }
        for (a, b) in zip(starts, starts.dropFirst()) {
            let chunk = Array(body[(a + delimiter.count)..<b])
            guard let headEnd = find(Array("\r\n\r\n".utf8), in: chunk, from: 0) else { continue }
            let head = String(decoding: chunk[..<headEnd], as: UTF8.self)
            var content = Array(chunk[(headEnd + 4)...])
            if content.suffix(2) == [13, 10] { content.removeLast(2) }
            guard let nameStart = head.firstRange(of: "name=\"") else { continue }
            let name = head[nameStart.upperBound...].prefix { $0 != "\"" }
            out.append(Part(name: String(name), body: content))
        }
        return out
    }

    static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard needle.count <= haystack.count, start <= haystack.count - needle.count else { return nil }
        var i = start
        while i <= haystack.count - needle.count {
            if haystack[i] == needle[0], haystack[i..<(i + needle.count)].elementsEqual(needle) { return i }
            i += 1
        }
        return nil
    }
}

private extension Substring {
    /// Without `c` at either end (a quoted parameter value's quotes).
    func trimmingCharacters(_ c: Character) -> Substring {
        var s = self
        while s.first == c { s = s.dropFirst() }
        while s.last == c { s = s.dropLast() }
        return s
    }
}
