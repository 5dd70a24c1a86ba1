import Foundation

/// A small, dependency-free line chart in SVG with logarithmic axes.
struct SVGLineChart {
    struct Series {
        var name: String
        var color: String
        var points: [(x: Double, y: Double)]
        var dashed = false
    }

    var title: String
    var subtitle: String
    var xLabel: String
    var yLabel: String
    var series: [Series]
    /// Where to put the x ticks and what to call them.
    var xTicks: [(value: Double, label: String)]
    /// How y values are printed.
    var yFormat: (Double) -> String = { short($0) }

    private let width = 820.0
    private let height = 480.0
    private let left = 90.0
    private let right = 250.0
    private let top = 64.0
    private let bottom = 62.0

    func render() -> String {
        let all = series.flatMap(\.points).filter { $0.x > 0 && $0.y > 0 }
        guard !all.isEmpty else { return "<svg xmlns=\"http://www.w3.org/2000/svg\"/>" }
        let plot = PlotArea(chart: self, points: all)
        var svg = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" viewBox="0 0 \(Int(width)) \(Int(height))" font-family="Helvetica, Arial, sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="white"/>
            <text x="\(left)" y="26" font-size="16" font-weight="bold">\(escape(title))</text>
            <text x="\(left)" y="46" fill="#555">\(escape(subtitle))</text>

            """
        svg += horizontalGrid(plot)
        svg += verticalGridAndFrame(plot)
        svg += seriesLines(plot)
        svg += endLabels(plot)
        svg += legend()
        svg += "</svg>\n"
        return svg
    }

    /// Where the data goes: the plot's box, its log10 range on each axis
    /// (y widened to whole decades) and the mapping of values to pixels.
    private struct PlotArea {
        /// The plot's box, in pixels.
        let left, top, width, height: Double
        /// log10 of the ends of each axis.
        let xMin, xMax, yMin, yMax: Double

        init(chart: SVGLineChart, points: [(x: Double, y: Double)]) {
            let xs = chart.xTicks.map(\.value) + points.map(\.x)
            xMin = log10(xs.min()!)
            xMax = log10(xs.max()!)
            yMin = floor(log10(points.map(\.y).min()!))
            yMax = ceil(log10(points.map(\.y).max()!))
            left = chart.left
            top = chart.top
            width = chart.width - chart.left - chart.right
            height = chart.height - chart.top - chart.bottom
        }

        func px(_ x: Double) -> Double { left + (xMax > xMin ? (log10(x) - xMin) / (xMax - xMin) : 0.5) * width }
        func py(_ y: Double) -> Double {
            top + height - (yMax > yMin ? (log10(y) - yMin) / (yMax - yMin) : 0.5) * height
        }
    }

    /// Horizontal grid: every power of ten, lighter lines at 2 and 5.
    private func horizontalGrid(_ plot: PlotArea) -> String {
        var svg = ""
        var decade = plot.yMin
        while decade <= plot.yMax {
            for factor in [1.0, 2.0, 5.0] {
                let value = pow(10, decade) * factor
                guard log10(value) <= plot.yMax + 1e-9 else { continue }
                let y = plot.py(value)
                let major = factor == 1
                svg += "<line x1=\"\(r(left))\" y1=\"\(r(y))\" x2=\"\(r(left + plot.width))\" y2=\"\(r(y))\" stroke=\"\(major ? "#ccc" : "#eee")\"/>\n"
                if major || plot.yMax - plot.yMin <= 2 {
                    svg += "<text x=\"\(r(left - 8))\" y=\"\(r(y + 4))\" text-anchor=\"end\" fill=\"#333\">\(escape(yFormat(value)))</text>\n"
                }
            }
            decade += 1
        }
        return svg
    }

    /// A vertical line and a label at each x tick, the plot's frame and the axis titles.
    private func verticalGridAndFrame(_ plot: PlotArea) -> String {
        var svg = ""
        for tick in xTicks {
            let x = plot.px(tick.value)
            svg += "<line x1=\"\(r(x))\" y1=\"\(r(top))\" x2=\"\(r(x))\" y2=\"\(r(top + plot.height))\" stroke=\"#eee\"/>\n"
            svg += "<text x=\"\(r(x))\" y=\"\(r(top + plot.height + 18))\" text-anchor=\"middle\" fill=\"#333\">\(escape(tick.label))</text>\n"
        }
        svg += "<rect x=\"\(r(left))\" y=\"\(r(top))\" width=\"\(r(plot.width))\" height=\"\(r(plot.height))\" fill=\"none\" stroke=\"#888\"/>\n"
        svg += "<text x=\"\(r(left + plot.width / 2))\" y=\"\(r(height - 18))\" text-anchor=\"middle\">\(escape(xLabel))</text>\n"
        svg += "<text transform=\"translate(22 \(r(top + plot.height / 2))) rotate(-90)\" text-anchor=\"middle\">\(escape(yLabel))</text>\n"
        return svg
    }

    /// Each series as a line through its points, with a dot (and a tooltip) at each point.
    private func seriesLines(_ plot: PlotArea) -> String {
        var svg = ""
        for item in series {
            let points = item.points.filter { $0.x > 0 && $0.y > 0 }
            guard !points.isEmpty else { continue }
            let path = points.map { "\(r(plot.px($0.x))),\(r(plot.py($0.y)))" }.joined(separator: " ")
            svg += "<polyline points=\"\(path)\" fill=\"none\" stroke=\"\(item.color)\" stroke-width=\"2.5\"\(item.dashed ? " stroke-dasharray=\"6 4\"" : "")/>\n"
            for point in points {
                svg += "<circle cx=\"\(r(plot.px(point.x)))\" cy=\"\(r(plot.py(point.y)))\" r=\"4\" fill=\"\(item.color)\"><title>\(escape(item.name)): \(escape(yFormat(point.y))) at \(escape(short(point.x)))</title></circle>\n"
            }
        }
        return svg
    }

    /// Labels each line's last point with its value, pushed apart vertically
    /// so that labels of lines ending close together stay readable.
    private func endLabels(_ plot: PlotArea) -> String {
        var labels: [(y: Double, x: Double, text: String, color: String)] = []
        for item in series {
            guard let last = item.points.filter({ $0.x > 0 && $0.y > 0 }).last else { continue }
            labels.append((plot.py(last.y) - 7, plot.px(last.x) + 7, yFormat(last.y), item.color))
        }
        labels.sort { $0.y < $1.y }
        for index in labels.indices.dropFirst() where labels[index].y - labels[index - 1].y < 13 {
            labels[index].y = labels[index - 1].y + 13
        }
        var svg = ""
        for label in labels {
            svg += "<text x=\"\(r(label.x))\" y=\"\(r(label.y))\" fill=\"\(label.color)\" font-size=\"11\">\(escape(label.text))</text>\n"
        }
        return svg
    }

    /// Each series' line style and name (wrapped), right of the plot.
    private func legend() -> String {
        var svg = ""
        var legendY = top + 6
        for item in series {
            let x = width - right + 24
            svg += "<line x1=\"\(r(x))\" y1=\"\(r(legendY))\" x2=\"\(r(x + 26))\" y2=\"\(r(legendY))\" stroke=\"\(item.color)\" stroke-width=\"3\"\(item.dashed ? " stroke-dasharray=\"6 4\"" : "")/>\n"
            let lines = wrap(item.name, width: 27)
            for (index, line) in lines.enumerated() {
                svg += "<text x=\"\(r(x + 34))\" y=\"\(r(legendY + 4 + Double(index) * 15))\">\(escape(line))</text>\n"
            }
            legendY += 22 + Double(lines.count - 1) * 15
        }
        return svg
    }

    private func r(_ value: Double) -> String { String(format: "%.1f", value) }

    private func escape(_ text: String) -> String { svgEscape(text) }

    private func wrap(_ text: String, width: Int) -> [String] {
        var lines: [String] = []
        var current = ""
        for word in text.split(separator: " ") {
            if !current.isEmpty && current.count + word.count + 1 > width {
                lines.append(current)
                current = String(word)
            } else {
                current += (current.isEmpty ? "" : " ") + word
            }
        }
        if !current.isEmpty { lines.append(current) }
        return lines
    }
}

/// 1234 → "1.2k", 1500000 → "1.5M", 0.5 → "0.5".
func short(_ value: Double) -> String {
    func trim(_ text: String) -> String { text.hasSuffix(".0") ? String(text.dropLast(2)) : text }
    switch abs(value) {
    case 1e6...: return trim(String(format: "%.1f", value / 1e6)) + "M"
    case 1e3...: return trim(String(format: value >= 1e5 ? "%.0f" : "%.1f", value / 1e3)) + "k"
    case 10...: return String(format: "%.0f", value)
    case 1...: return trim(String(format: "%.1f", value))
    default: return String(format: "%.2g", value)
    }
}

/// `text` safe inside an SVG text node or attribute.
func svgEscape(_ text: String) -> String {
    text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
        .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
}
