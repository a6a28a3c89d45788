/// A /metrics exposition cut into its families, for tests that compare each family's text as it was
/// declared with what a registry renders (families in name order).
public enum ExpositionFamilies {
    /// The exposition's families, each its HELP line to the next one's.
    public static func split(_ text: String) -> [String] {
        text.split(separator: "# HELP ").map { "# HELP " + $0 }
    }

    /// Family texts put in the registry's order: by name.
    public static func byName(_ parts: [String]) -> String {
        parts.flatMap(split).sorted { $0.split(separator: " ")[2] < $1.split(separator: " ")[2] }.joined()
    }
}
