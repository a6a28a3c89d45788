import JSON

/// Typed access to one JSON object of a client event, with errors that name the field by its full
/// path (`session.audio.input.format.rate`), so a client sees exactly what it got wrong.
///
/// A member that is `null` reads as absent, as the Realtime API treats it; the few fields where
/// `null` means something (`turn_detection`) ask `isNull` first.
package struct EventFields {
    package let members: JSON
    /// The object's own path, "" for the event itself.
    package let path: String

    package init(_ json: JSON, path: String = "") {
        members = json
        self.path = path
    }

    package func name(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    private func value(_ key: String) -> JSON? {
        guard let value = members[key], !value.isNull else { return nil }
        return value
    }

    package func has(_ key: String) -> Bool { members[key] != nil }
    package func isNull(_ key: String) -> Bool { members[key]?.isNull == true }

    package func invalid(_ key: String, _ problem: String) -> ProtocolError {
        ProtocolError(.invalidValue, "'\(name(key))' \(problem)", param: name(key))
    }

    package func missing(_ key: String) -> ProtocolError {
        ProtocolError(.missingField, "missing required field '\(name(key))'", param: name(key))
    }

    /// Refuses a member not in `known`, for a protocol whose objects are strict (GPT-Live's).
    package func refuseUnknown(_ known: Set<String>) throws(ProtocolError) {
        guard let members = members.object else { return }
        for (key, _) in members where !known.contains(key) {
            throw ProtocolError(.unknownParameter, "unknown parameter '\(name(key))'", param: name(key))
        }
    }

    package func string(_ key: String) throws(ProtocolError) -> String? {
        guard let value = value(key) else { return nil }
        guard let string = value.string else { throw invalid(key, "must be a string") }
        return string
    }

    package func requiredString(_ key: String) throws(ProtocolError) -> String {
        guard let string = try string(key) else { throw missing(key) }
        return string
    }

    package func bool(_ key: String) throws(ProtocolError) -> Bool? {
        guard let value = value(key) else { return nil }
        guard let bool = value.bool else { throw invalid(key, "must be true or false") }
        return bool
    }

    package func number(_ key: String, in range: ClosedRange<Double>) throws(ProtocolError) -> Double? {
        guard let value = value(key) else { return nil }
        guard let number = value.double, range.contains(number) else {
            throw invalid(key, "must be a number from \(Self.format(range.lowerBound)) to \(Self.format(range.upperBound)), got \(value)")
        }
        return number
    }

    package func integer(_ key: String, in range: ClosedRange<Int>) throws(ProtocolError) -> Int? {
        guard let value = value(key) else { return nil }
        guard let number = value.int, range.contains(number) else {
            throw invalid(key, "must be a whole number from \(range.lowerBound) to \(range.upperBound), got \(value)")
        }
        return number
    }

    package func object(_ key: String) throws(ProtocolError) -> EventFields? {
        guard let value = value(key) else { return nil }
        guard value.object != nil else { throw invalid(key, "must be an object") }
        return EventFields(value, path: name(key))
    }

    package func array(_ key: String) throws(ProtocolError) -> [JSON]? {
        guard let value = value(key) else { return nil }
        guard let array = value.array else { throw invalid(key, "must be an array") }
        return array
    }

    /// A string that must be one of `allowed`.
    package func choice(_ key: String, _ allowed: [String]) throws(ProtocolError) -> String? {
        guard let string = try string(key) else { return nil }
        guard allowed.contains(string) else {
            throw invalid(key, "must be one of \(allowed.map { "'\($0)'" }.joined(separator: ", ")), got '\(string)'")
        }
        return string
    }

    private static func format(_ x: Double) -> String {
        x == x.rounded() && abs(x) < 1e15 ? String(Int(x)) : String(x)
    }
}
