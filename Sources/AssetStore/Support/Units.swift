// Durations ("90s", "10m", "12h", "30d", "1h30m") and sizes ("512MiB", "50GiB", or bytes) as
// the config file and the wire write them.

/// Parsing of the duration and size notations.
public enum Units {
    private static let durationUnits: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800]
    private static let sizeUnits: [String: Int64] = [
        "": 1, "B": 1, "KB": 1000, "MB": 1_000_000, "GB": 1_000_000_000, "TB": 1_000_000_000_000,
        "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
    ]

    /// Seconds for "90s", "10m", "1h30m", "0s", or a bare number of seconds; nil if invalid.
    public static func duration(_ text: String) -> Double? {
        let t = text.trimmingCharacters(in: " ")
        if let plain = Double(t), plain >= 0 { return plain }
        // Milliseconds ("100ms") alone: "m" is minutes in a combined duration.
        if t.hasSuffix("ms"), let ms = Double(t.dropLast(2)), ms >= 0 { return ms / 1000 }
        var total = 0.0
        var number = ""
        var sawUnit = false
        for c in t {
            if c.isNumber || c == "." {
                number.append(c)
            } else if let unit = durationUnits[c], let n = Double(number) {
                total += n * unit
                number = ""
                sawUnit = true
            } else {
                return nil
            }
        }
        return sawUnit && number.isEmpty ? total : nil
    }

    /// Bytes for "512MiB", "50GiB", "10GB", "4096"; nil if invalid.
    public static func size(_ text: String) -> Int64? {
        let t = text.trimmingCharacters(in: " ")
        let digits = t.prefix { $0.isNumber || $0 == "." }
        let unit = String(t.dropFirst(digits.count)).trimmingCharacters(in: " ")
        guard let n = Double(digits), n >= 0, let mult = sizeUnits[unit] else { return nil }
        let bytes = n * Double(mult)
        return bytes < 9.2e18 ? Int64(bytes) : nil
    }

    /// "1h30m", "90s", "0s" for display.
    public static func formatDuration(_ seconds: Double) -> String {
        var s = Int(seconds.rounded())
        if s == 0 { return "0s" }
        var out = ""
        for (unit, size) in [("d", 86_400), ("h", 3600), ("m", 60), ("s", 1)] where s >= size {
            out += "\(s / size)\(unit)"
            s %= size
        }
        return out
    }
}
