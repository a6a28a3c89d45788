#if canImport(Glibc)
import Glibc
#endif

/// Small inline SVG charts for the HTML report: no scripts, no external files, readable in any
/// browser and in a file viewer.
enum SVGChart {
    struct Series {
        let name: String
        let points: [(x: Double, y: Double)]
    }

    static let width = 720.0, height = 320.0
    static let left = 80.0, right = 180.0, top = 20.0, bottom = 50.0
    static let colors = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"]

    /// Lines with markers; an axis is logarithmic when `logX` or `logY` says so (a log y axis
    /// spans whole decades, one tick each).
    /// `yMax`: the top of a linear y axis; by default the data's maximum rounded up to a round number.
    static func lines(_ series: [Series], xLabel: String, yLabel: String, logX: Bool = false, logY: Bool = false, yMax: Double? = nil,
                      xFormat: (Double) -> String, yFormat: (Double) -> String) -> String {
        let all = series.flatMap(\.points)
        guard !all.isEmpty else { return "<p>(no data)</p>" }
        func tx(_ x: Double) -> Double { logX ? log10(max(x, 1e-12)) : x }
        func ty(_ y: Double) -> Double { logY ? log10(max(y, 1e-12)) : y }
        let xs = all.map { tx($0.x) }
        var (x0, x1) = (xs.min()!, xs.max()!)
        if x1 - x0 < 1e-9 { x0 -= 1; x1 += 1 }
        let ys = all.map { ty($0.y) }
        var (y0, y1) = logY ? (floor(ys.min()!), ceil(ys.max()!)) : (0, yMax ?? niceCeiling(max(all.map(\.y).max()! * 1.05, 1e-12)))
        if y1 - y0 < 1e-9 { y1 = y0 + 1 }
        let plotW = width - left - right, plotH = height - top - bottom
        func px(_ x: Double) -> Double { left + (tx(x) - x0) / (x1 - x0) * plotW }
        func py(_ y: Double) -> Double { top + plotH - (ty(y) - y0) / (y1 - y0) * plotH }
        var svg = frame(xLabel: xLabel, yLabel: yLabel)
        let yTicks = logY ? Array(stride(from: y0, through: y1, by: 1)) : (0...4).map { y0 + (y1 - y0) * Double($0) / 4 }
        for tick in yTicks {
            let y = logY ? pow10(tick) : tick
            svg += line(left, py(y), left + plotW, py(y), stroke: "#ddd")
            svg += text(left - 6, py(y) + 4, yFormat(y), anchor: "end")
        }
        for i in 0...4 {
            let value = x0 + (x1 - x0) * Double(i) / 4
            let x = logX ? pow10(value) : value
            svg += text(px(x), top + plotH + 18, xFormat(x), anchor: "middle")
        }
        for (i, s) in series.enumerated() {
            let color = colors[i % colors.count]
            let path = s.points.map { "\(fmt(px($0.x))),\(fmt(py($0.y)))" }.joined(separator: " ")
            svg += "<polyline fill=\"none\" stroke=\"\(color)\" stroke-width=\"2\" points=\"\(path)\"/>"
            for p in s.points { svg += "<circle cx=\"\(fmt(px(p.x)))\" cy=\"\(fmt(py(p.y)))\" r=\"3.5\" fill=\"\(color)\"><title>\(escape(s.name)): \(xFormat(p.x)), \(yFormat(p.y))</title></circle>" }
            svg += legend(i, s.name, color)
        }
        return svg + "</svg>"
    }

    /// Horizontal bars, one per (label, value).
    static func bars(_ items: [(label: String, value: Double)], unit: String, format: (Double) -> String) -> String {
        guard let maximum = items.map(\.value).max(), maximum > 0 else { return "<p>(no data)</p>" }
        let rowH = 26.0
        let h = top + Double(items.count) * rowH + 10
        let labelW = 220.0, barW = width - labelW - 120
        var svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(width))\" height=\"\(Int(h))\" font-family=\"sans-serif\" font-size=\"12\">"
        for (i, item) in items.enumerated() {
            let y = top + Double(i) * rowH
            let w = item.value / maximum * barW
            svg += text(labelW - 8, y + 15, item.label, anchor: "end")
            svg += "<rect x=\"\(fmt(labelW))\" y=\"\(fmt(y + 3))\" width=\"\(fmt(max(1, w)))\" height=\"18\" fill=\"\(colors[i % colors.count])\"/>"
            svg += text(labelW + w + 6, y + 16, "\(format(item.value)) \(unit)", anchor: "start")
        }
        return svg + "</svg>"
    }

    /// The next of 1, 2, 2.5, 5 × 10^k at or above `value`, so that axis ticks (quarters) are round.
    static func niceCeiling(_ value: Double) -> Double {
        let magnitude = pow(10, floor(log10(value)))
        return [1, 2, 2.5, 5, 10].map { $0 * magnitude }.first { $0 >= value } ?? value
    }

    // MARK: Pieces

    private static func frame(xLabel: String, yLabel: String) -> String {
        let plotH = height - top - bottom
        var svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(width))\" height=\"\(Int(height))\" font-family=\"sans-serif\" font-size=\"12\">"
        svg += line(left, top, left, top + plotH, stroke: "#333")
        svg += line(left, top + plotH, width - right, top + plotH, stroke: "#333")
        svg += text((left + width - right) / 2, height - 10, xLabel, anchor: "middle")
        svg += "<text x=\"16\" y=\"\(fmt(top + plotH / 2))\" text-anchor=\"middle\" transform=\"rotate(-90 16 \(fmt(top + plotH / 2)))\">\(escape(yLabel))</text>"
        return svg
    }

    private static func legend(_ i: Int, _ name: String, _ color: String) -> String {
        let x = width - right + 12, y = top + 10 + Double(i) * 18
        return "<rect x=\"\(fmt(x))\" y=\"\(fmt(y - 9))\" width=\"12\" height=\"12\" fill=\"\(color)\"/>" + text(x + 18, y + 2, name, anchor: "start")
    }

    private static func line(_ x1: Double, _ y1: Double, _ x2: Double, _ y2: Double, stroke: String) -> String {
        "<line x1=\"\(fmt(x1))\" y1=\"\(fmt(y1))\" x2=\"\(fmt(x2))\" y2=\"\(fmt(y2))\" stroke=\"\(stroke)\"/>"
    }

    private static func text(_ x: Double, _ y: Double, _ content: String, anchor: String) -> String {
        "<text x=\"\(fmt(x))\" y=\"\(fmt(y))\" text-anchor=\"\(anchor)\">\(escape(content))</text>"
    }

    static func escape(_ text: String) -> String {
        text.replacingAll("&", "&amp;").replacingAll("<", "&lt;").replacingAll(">", "&gt;").replacingAll("\"", "&quot;")
    }

    private static func fmt(_ value: Double) -> String { String(Double(Int(value * 10)) / 10) }
}

extension String {
    /// Every occurrence of `target` replaced (no Foundation here).
    func replacingAll(_ target: String, _ replacement: String) -> String {
        guard !target.isEmpty else { return self }
        var out = ""
        var rest = Substring(self)
        while let range = rest.firstRange(of: target) {
            out += rest[..<range.lowerBound] + replacement
            rest = rest[range.upperBound...]
        }
        return out + rest
    }
}

private func pow10(_ x: Double) -> Double { pow(10, x) }
