/// One `<type>=<value>` line of a description other than a= and m=, kept as it came (v=, o=, s=,
/// c=, b=, t=, ...), so that a description serialises back without losing what Parley does not read.
package struct SDPLine: Equatable, Sendable {
    /// The one-letter type (RFC 8866 section 5: a lowercase ASCII letter).
    package var type: Character
    package var value: String

    package init(_ type: Character, _ value: String) {
        self.type = type
        self.value = value
    }
}

/// One `a=` line: `a=<name>` (a property) or `a=<name>:<value>` (RFC 8866 section 5.13). The value
/// is everything after the first colon, kept verbatim (Chrome writes `a=msid-semantic: WMS`, with
/// the space), so a description round-trips byte for byte.
package struct SDPAttribute: Equatable, Sendable {
    package var name: String
    /// nil for a property attribute; "" for `a=name:` with nothing after the colon.
    package var value: String?

    package init(_ name: String, _ value: String? = nil) {
        self.name = name
        self.value = value
    }

    /// The text after `a=`.
    package var text: String {
        guard let value else { return name }
        return name + ":" + value
    }
}

extension Array where Element == SDPAttribute {
    /// The first attribute called `name` (names compare exactly: RFC 8866 section 5.13 makes them
    /// case-sensitive).
    package func first(named name: String) -> SDPAttribute? {
        first { $0.name == name }
    }

    /// The values of every attribute called `name`, in order (a property attribute gives "").
    package func values(named name: String) -> [String] {
        compactMap { $0.name == name ? ($0.value ?? "") : nil }
    }

    package func contains(named name: String) -> Bool {
        contains { $0.name == name }
    }
}
