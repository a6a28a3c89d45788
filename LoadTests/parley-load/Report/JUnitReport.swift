/// Eval results as JUnit XML, which CI systems (GitLab, Jenkins, GitHub's test reporters) read: a
/// test suite per script, a test case per expectation named by its line, a failure carrying what
/// was seen; a script that could not run is one case with an error.
enum JUnitReport {
    struct Suite {
        let name: String
        let file: String
        let verdicts: [EvalVerdict]
        /// Why the script did not run at all.
        let error: String?
        let seconds: Double
    }

    static func xml(_ suites: [Suite]) -> String {
        let tests = suites.reduce(0) { $0 + max(1, $1.verdicts.count) }
        let failures = suites.reduce(0) { $0 + $1.verdicts.filter { !$0.passed }.count }
        let errors = suites.filter { $0.error != nil }.count
        var out = #"<?xml version="1.0" encoding="UTF-8"?>"# + "\n"
        out += #"<testsuites name="parley-load eval" tests="\#(tests)" failures="\#(failures)" errors="\#(errors)" time="\#(seconds(suites.reduce(0) { $0 + $1.seconds }))">"# + "\n"
        for suite in suites {
            let failed = suite.verdicts.filter { !$0.passed }.count
            out += #"  <testsuite name="\#(escape(suite.name))" file="\#(escape(suite.file))" tests="\#(max(1, suite.verdicts.count))" failures="\#(failed)" errors="\#(suite.error == nil ? 0 : 1)" time="\#(seconds(suite.seconds))">"# + "\n"
            if let error = suite.error {
                out += #"    <testcase classname="\#(escape(suite.name))" name="run"><error message="\#(escape(error))"/></testcase>"# + "\n"
            }
            for verdict in suite.verdicts {
                let name = "line \(verdict.expectation.line): expect \(verdict.expectation.text)"
                out += #"    <testcase classname="\#(escape(suite.name))" name="\#(escape(name))""#
                if verdict.passed {
                    out += "><system-out>\(escape(verdict.detail))</system-out></testcase>\n"
                } else {
                    out += #"><failure message="\#(escape(verdict.detail))"/></testcase>"# + "\n"
                }
            }
            out += "  </testsuite>\n"
        }
        return out + "</testsuites>\n"
    }

    private static func seconds(_ value: Double) -> String {
        let millis = Int((value * 1_000).rounded())
        let fraction = String(millis % 1_000)
        return "\(millis / 1_000).\(String(repeating: "0", count: 3 - fraction.count))\(fraction)"
    }

    /// XML 1.0 text: the five markup characters escaped, and control characters (which XML 1.0
    /// cannot carry at all) dropped.
    static func escape(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            case "\t", "\n", "\r": out.unicodeScalars.append(scalar)
            default: if scalar.value >= 0x20 { out.unicodeScalars.append(scalar) }
            }
        }
        return out
    }
}
