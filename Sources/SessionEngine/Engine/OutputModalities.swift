import JSON

/// What a response is made of. With `.audio` the reply is speech and its transcript (the Realtime
/// API's `["audio"]`, beta `["text","audio"]`); without it, text only.
public struct OutputModalities: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let text = OutputModalities(rawValue: 1)
    public static let audio = OutputModalities(rawValue: 2)
}

package extension OutputModalities {
    /// GA lists one modality (`["audio"]` means speech with its transcript); the beta lists text
    /// with audio (`["text","audio"]`).
    func json(dialect: Dialect) -> JSON {
        switch (contains(.audio), dialect) {
        case (true, .ga): .array([.string("audio")])
        case (true, .beta): .array([.string("text"), .string("audio")])
        case (false, _): .array([.string("text")])
        }
    }
}
