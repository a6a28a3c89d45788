/// A label on a metric's samples, typed: the label's name is its type's, the value its instance's,
/// so a sample cannot carry a label its family does not declare, or a value spelled by hand. An
/// enumeration declares a label with a closed set of values (`LabelledFamily` makes one series of
/// each case); a struct holding a value declares one known only at scrape (a tenant, an endpoint),
/// for a `ComputedFamily`. The exposition escapes every value (`PrometheusText.escape`).
public protocol MetricLabel: Sendable {
    /// The label's name in the exposition (`status`).
    static var labelName: String { get }
    /// This value as the exposition shows it, before escaping (`completed`).
    var labelValue: String { get }
}

extension MetricLabel where Self: RawRepresentable, RawValue == String {
    /// An enumeration's raw value is its label value, unless it says otherwise.
    public var labelValue: String { rawValue }
}

extension MetricLabel {
    /// The label as a sample carries it: `name="value"`, the value escaped.
    public var labelText: String { "\(Self.labelName)=\"\(PrometheusText.escape(labelValue))\"" }
}
