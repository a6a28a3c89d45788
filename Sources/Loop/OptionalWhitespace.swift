extension Substring {
    /// Without the spaces and tabs around it: HTTP's optional whitespace around a field value
    /// (RFC 9110 section 5.6.3), for the request parser, the response parser and the talk client.
    public func trimmingSpaces() -> Substring {
        var s = self
        while let f = s.first, f == " " || f == "\t" { s.removeFirst() }
        while let l = s.last, l == " " || l == "\t" { s.removeLast() }
        return s
    }
}
