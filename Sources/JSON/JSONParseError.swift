extension JSON {
    /// Why a text is not JSON, and where: `offset` is the byte (UTF-8) offset of the problem.
    public struct ParseError: Error, Equatable, Sendable, CustomStringConvertible {
        public let offset: Int
        /// What was wrong, in words, e.g. "unescaped control character U+000A in a string".
        public let reason: String

        public init(offset: Int, reason: String) {
            self.offset = offset
            self.reason = reason
        }

        public var description: String { "invalid JSON at byte \(offset): \(reason)" }
    }
}
