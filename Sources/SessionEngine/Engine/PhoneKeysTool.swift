import JSON

/// `press_keys`: a function tool the server runs itself on a phone call (issue 54, "keys out"), so
/// the agent can walk an IVR menu. A session that declares a function of this name on a SIP call
/// has its calls pressed on the line as RFC 4733 events, and answered by the server with the
/// call's output; on any other carrier it is the client's function like any other.
///
/// Its arguments: `{"keys": "1"}`, one to 32 of 0-9, A-D, `*` and `#` (a space or comma between
/// them is skipped). docs/protocol.md ("Keys out") gives the declaration.
public enum PhoneKeysTool {
    public static let name = "press_keys"
    public static let maxKeys = 32

    public enum Refusal: Error, Equatable {
        case notJSON
        case noKeys
        case notKeys(String)
        case tooMany(Int)
        /// The far end's SDP had no telephone-event: nothing can be pressed on this call.
        case noTelephoneEvents

        public var message: String {
            switch self {
            case .notJSON: "the arguments are not a JSON object"
            case .noKeys: "'keys' is missing or empty"
            case .notKeys(let text): "'\(text)' is not a key: press 0-9, *, # or A-D"
            case .tooMany(let count): "\(count) keys; at most \(PhoneKeysTool.maxKeys) are pressed at once"
            case .noTelephoneEvents: "the far end takes no RFC 4733 telephone-events: no key can be pressed on this call"
            }
        }
    }

    /// The keys the arguments name, in order.
    public static func keys(in arguments: String) throws(Refusal) -> [Character] {
        guard let json = try? JSON(parsing: arguments), json.object != nil else { throw .notJSON }
        guard let text = json["keys"]?.string ?? json["keys"]?.double.map({ String(Int($0)) }), !text.isEmpty else { throw .noKeys }
        var keys: [Character] = []
        for character in text where character != " " && character != "," && character != "-" {
            let key = Character(character.uppercased())
            guard "0123456789*#ABCD".contains(key) else { throw .notKeys(String(character)) }
            keys.append(key)
        }
        guard !keys.isEmpty else { throw .noKeys }
        guard keys.count <= maxKeys else { throw .tooMany(keys.count) }
        return keys
    }

    /// The call's output: what was pressed, or why nothing was.
    public static func output(pressed keys: [Character]) -> String {
        JSON.object([("pressed", .string(String(keys)))]).description
    }

    public static func output(refused why: String) -> String {
        JSON.object([("error", .string(why))]).description
    }
}
