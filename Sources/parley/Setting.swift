import ArgumentParser

/// One option of the server: its flag, its `PARLEY_` environment variable, its default and what a
/// good value is, each written once. A value comes from the flag, else from the variable (the real
/// environment, or a line of the `--config` file, which stands in for it), else it is the default.
/// A value that is there but does not parse, or is out of range, stops the start with one line
/// naming the flag, the variable and the value; it never quietly becomes the default (Hummingbird's
/// `Environment.require(_:as:)` works the same way).
///
/// The flag itself is declared `String?` (`@Option(Settings.port) var port: String?`), so that
/// swift-argument-parser only collects the text and every value, from whichever source, is
/// judged here, by one parser and with one kind of message.
struct Setting<Value: Sendable>: Sendable {
    /// "--workers"; `aliases` are further spellings of the same flag.
    let flag: String
    let aliases: [String]
    /// "PARLEY_WORKERS"
    let variable: String
    let defaultValue: Value
    /// What the option does, for `--help`; the variable and the default are added to it.
    let about: String
    /// The default as `--help` shows it; nil: none shown.
    let shownDefault: String?
    let valueName: String?
    /// The value a text stands for, or why it stands for none ("is not a whole number").
    let parse: @Sendable (String) throws(SettingRejection) -> Value

    init(_ flag: String, aliases: [String] = [], _ variable: String, default defaultValue: Value, shown: String?,
         valueName: String? = nil, about: String, parse: @escaping @Sendable (String) throws(SettingRejection) -> Value) {
        self.flag = flag
        self.aliases = aliases
        self.variable = variable
        self.defaultValue = defaultValue
        self.shownDefault = shown
        self.valueName = valueName
        self.about = about
        self.parse = parse
    }

    /// The value given by the flag's text (nil when the flag is absent), else by the variable,
    /// else the default.
    func read(_ flagText: String?) throws(SettingError) -> Value {
        guard let text = text(flagText) else { return defaultValue }
        do {
            return try parse(text)
        } catch {
            throw refuse(text, error.reason)
        }
    }

    /// The text given, by the flag or else the variable; nil when neither is.
    func text(_ flagText: String?) -> String? { flagText ?? Environment.string(variable) }

    /// A check between this setting's value and another's, or a value's own, with this setting's names.
    func refuse(_ value: String, _ reason: String) -> SettingError {
        SettingError(names: "\(flag) (\(variable))", value: value, reason: reason)
    }

    var names: NameSpecification { NameSpecification([flag] + aliases) }

    var help: ArgumentHelp {
        ArgumentHelp("\(about) (\(variable)\(shownDefault.map { "; default \($0)" } ?? "")).", valueName: valueName)
    }
}

/// Why a text is not a value of a setting, as the end of a sentence that starts with the text.
struct SettingRejection: Error {
    let reason: String
    init(_ reason: String) { self.reason = reason }
}

/// A bad value for a setting, said in one line: "--workers (PARLEY_WORKERS): 'abc' is not a whole number".
struct SettingError: Error, CustomStringConvertible {
    /// The flag, and its variable if it has one.
    let names: String
    let value: String
    let reason: String

    var description: String { "\(names): '\(value)' \(reason)" }

    /// A file named by a flag (or a variable) that cannot be read.
    static func unreadable(_ names: String, _ path: String) -> SettingError { SettingError(names: names, value: path, reason: "cannot be read") }
}

/// A start that cannot go on, for a reason other than one setting's value: one line, as a bad
/// setting's is.
struct StartupError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension NameSpecification {
    init(_ flags: [String]) {
        self.init(flags.map { .customLong(String($0.dropFirst(2))) })
    }
}

extension Option where Value == String? {
    /// The flag of a setting, its text judged by the setting (`Setting.read`).
    init<T>(_ setting: Setting<T>) {
        self.init(name: setting.names, help: setting.help)
    }
}

// MARK: Kinds of value

extension Setting where Value == String {
    /// Any text.
    static func text(_ flag: String, _ variable: String, default value: String, shown: String? = nil, valueName: String? = nil, about: String) -> Self {
        Self(flag, variable, default: value, shown: shown ?? value, valueName: valueName, about: about) { $0 }
    }
}

extension Setting where Value == String? {
    /// Any text, or nothing when neither flag nor variable is given.
    static func text(_ flag: String, _ variable: String, shown: String? = nil, valueName: String? = nil, about: String) -> Self {
        Self(flag, variable, default: nil, shown: shown, valueName: valueName, about: about) { $0 }
    }
}

extension Setting where Value == Int {
    /// A whole number in `range` (which may be open above).
    static func whole(_ flag: String, _ variable: String, default value: Int, shown: String? = nil, in range: some RangeExpression<Int> & Sendable,
                      about: String) -> Self {
        Self(flag, variable, default: value, shown: shown ?? String(value), about: about) { text throws(SettingRejection) in try parseWholeNumber(text, in: range) }
    }
}

extension Setting where Value == Int? {
    /// A whole number in `range`, or nothing (no limit) when neither flag nor variable is given.
    static func whole(_ flag: String, _ variable: String, shown: String?, in range: some RangeExpression<Int> & Sendable, about: String) -> Self {
        Self(flag, variable, default: nil, shown: shown, about: about) { text throws(SettingRejection) in try parseWholeNumber(text, in: range) }
    }
}

extension Setting where Value == Double {
    /// A number in `range`: seconds, minutes.
    static func number(_ flag: String, aliases: [String] = [], _ variable: String, default value: Double, shown: String? = nil,
                       in range: some NumberRange, about: String) -> Self {
        Self(flag, aliases: aliases, variable, default: value, shown: shown ?? Self.plain(value), about: about) { text throws(SettingRejection) in
            try parseNumber(text, in: range)
        }
    }

    private static func plain(_ value: Double) -> String { value == value.rounded() ? String(Int(value)) : String(value) }
}

extension Setting where Value == Double? {
    /// A number in `range`, or nothing when neither flag nor variable is given.
    static func number(_ flag: String, _ variable: String, shown: String?, in range: some NumberRange, about: String) -> Self {
        Self(flag, variable, default: nil, shown: shown, about: about) { text throws(SettingRejection) in try parseNumber(text, in: range) }
    }
}

extension Setting {
    /// One of a few named values, e.g. a provider from its table.
    static func choice(_ flag: String, _ variable: String, default value: Value, shown: String?, among choices: [(name: String, value: Value)],
                       about: String) -> Self {
        let names = choices.map(\.name)
        return Self(flag, variable, default: value, shown: shown, about: about) { text throws(SettingRejection) in
            guard let chosen = choices.first(where: { $0.name == text }) else { throw SettingRejection("is not one of \(names.joined(separator: ", "))") }
            return chosen.value
        }
    }
}

/// The ranges a number setting can be held to, said in words for the refusal.
protocol NumberRange: Sendable {
    func contains(_ value: Double) -> Bool
    var words: String { get }
}

/// Above `lower` (exclusive) and at most `upper`: (0, 120].
struct Above: NumberRange {
    let lower: Double
    var upper: Double = .infinity
    func contains(_ value: Double) -> Bool { value > lower && value <= upper }
    var words: String { upper == .infinity ? "a number above \(Int(lower))" : "a number above \(Int(lower)) and at most \(Int(upper))" }
}

/// At least `lower` and at most `upper`: [0, 600].
struct AtLeast: NumberRange {
    let lower: Double
    var upper: Double = .infinity
    func contains(_ value: Double) -> Bool { value >= lower && value <= upper }
    var words: String { upper == .infinity ? "a number of at least \(Int(lower))" : "a number from \(Int(lower)) to \(Int(upper))" }
}

func parseWholeNumber(_ text: String, in range: some RangeExpression<Int>) throws(SettingRejection) -> Int {
    guard let value = Int(text) else { throw .init("is not a whole number") }
    guard range.contains(value) else {
        let bounds: String = switch range {
        case let r as ClosedRange<Int>: "from \(r.lowerBound) to \(r.upperBound)"
        case let r as PartialRangeFrom<Int>: "of at least \(r.lowerBound)"
        default: "in range"
        }
        throw .init("is not a whole number \(bounds)")
    }
    return value
}

private func parseNumber(_ text: String, in range: some NumberRange) throws(SettingRejection) -> Double {
    guard let value = Double(text), value.isFinite else { throw .init("is not a number") }
    guard range.contains(value) else { throw .init("is not \(range.words)") }
    return value
}
