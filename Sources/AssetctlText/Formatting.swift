// Human-readable output for assetctl and other clients: indented JSON, aligned tables, one-line
// cells for JSON values, `name  value` listings and event lines. Pure, so it is unit-tested.
// Output never ends lines with spaces; every non-empty result ends with a newline.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import JSON

/// Text renderings of results.
public enum Formatting {
    // MARK: - JSON

    /// `value` as JSON indented by `indent` spaces per level, object keys sorted, with a
    /// final newline. Empty objects and arrays stay on one line (`{}`, `[]`).
    public static func pretty(_ value: JSONValue, indent: Int = 2) -> String {
        var out = ""
        writePretty(value, level: 0, indent: indent, to: &out)
        out += "\n"
        return out
    }

    private static func writePretty(_ value: JSONValue, level: Int, indent: Int, to out: inout String) {
        let inner = String(repeating: " ", count: (level + 1) * indent)
        let outer = String(repeating: " ", count: level * indent)
        switch value {
        case .array(let items) where !items.isEmpty:
            out += "[\n"
            for (i, item) in items.enumerated() {
                out += inner
                writePretty(item, level: level + 1, indent: indent, to: &out)
                out += i + 1 < items.count ? ",\n" : "\n"
            }
            out += outer + "]"
        case .object(let members) where !members.isEmpty:
            out += "{\n"
            let keys = members.keys.sorted()
            for (i, key) in keys.enumerated() {
                out += inner + JSONValue.string(key).serialized() + ": "
                writePretty(members[key]!, level: level + 1, indent: indent, to: &out)  // key from members
                out += i + 1 < keys.count ? ",\n" : "\n"
            }
            out += outer + "}"
        default:
            out += value.serialized()
        }
    }

    // MARK: - Cells

    /// One value on one line for a table cell or a listing: strings bare (control characters
    /// escaped), null `-`, integral numbers without a fraction, `{collection, key}` as
    /// `collection/key`, `{file}` as the path, arrays of scalars joined by commas, other
    /// values as compact JSON.
    public static func cell(_ value: JSONValue) -> String {
        switch value {
        case .null: return "-"
        case .bool(let b): return b ? "true" : "false"
        case .int(let i): return String(i)
        case .double(let d): return number(d)
        case .string(let s): return s.controlsEscaped
        case .array(let items):
            if items.isEmpty { return "-" }
            if items.allSatisfy(isScalar) { return items.map(cell).joined(separator: ",") }
            return value.serialized()
        case .object:
            if let end = endText(value) { return end }
            return value.serialized()
        }
    }

    /// `{collection, key}` as `collection/key`, `{file}` as its path; nil for anything else.
    public static func endText(_ value: JSONValue) -> String? {
        guard case .object(let o) = value else { return nil }
        if o.count == 1, let path = o["file"]?.stringValue { return path.controlsEscaped }
        if o.count == 2, let c = o["collection"]?.stringValue, let k = o["key"]?.stringValue {
            return (c + "/" + k).controlsEscaped
        }
        return nil
    }

    /// A number without a needless `.0`; large or fractional values as Swift prints them.
    public static func number(_ d: Double) -> String {
        guard d.isFinite else { return "-" }
        if d == d.rounded(), abs(d) < 1e15 { return String(Int64(d)) }
        return String(d)
    }

    /// Unix seconds as UTC ISO 8601 (`2025-11-21T07:21:03Z`).
    public static func timestamp(_ seconds: Double) -> String {
        guard seconds.isFinite else { return "-" }
        var t = time_t(seconds.rounded(.down))
        var parts = tm()
        guard gmtime_r(&t, &parts) != nil else { return number(seconds) }
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))Z"
    }

    private static func isScalar(_ value: JSONValue) -> Bool {
        switch value {
        case .array, .object: return false
        default: return true
        }
    }

    // MARK: - Tables

    /// Columns separated by two spaces, each as wide as its widest cell. A column whose body
    /// cells are numbers (some of them `-`) is right-aligned, header included; the last column
    /// of a left-aligned row is not padded. Nothing at all when there are no rows.
    public static func table(header: [String], rows: [[String]]) -> String {
        let columnCount = max(header.count, rows.map(\.count).max() ?? 0)
        guard columnCount > 0, !rows.isEmpty else { return "" }
        func at(_ row: [String], _ i: Int) -> String { i < row.count ? row[i] : "" }
        var widths = [Int](repeating: 0, count: columnCount)
        for row in [header] + rows {
            for i in 0..<columnCount { widths[i] = max(widths[i], at(row, i).count) }
        }
        let numeric = (0..<columnCount).map { i in
            let cells = rows.map { at($0, i) }.filter { $0 != "-" }
            return !cells.isEmpty && cells.allSatisfy { Double($0) != nil && !$0.contains(where: \.isLetter) }
        }
        var out = ""
        for row in (header.isEmpty ? [] : [header]) + rows {
            var line = ""
            for i in 0..<columnCount {
                let c = at(row, i)
                let pad = String(repeating: " ", count: widths[i] - c.count)
                if i > 0 { line += "  " }
                line += numeric[i] ? pad + c : c + (i + 1 < columnCount ? pad : "")
            }
            while line.hasSuffix(" ") { line.removeLast() }
            out += line + "\n"
        }
        return out
    }

    /// Every key of the objects in `rows`: those of `leading` that occur first, in that order,
    /// then the rest sorted.
    public static func columns(of rows: [JSONValue], leading: [String] = ["collection", "key"]) -> [String] {
        var seen = Set<String>()
        for row in rows { seen.formUnion(row.objectValue?.keys ?? [:].keys) }
        let first = leading.filter { seen.contains($0) }
        return first + seen.subtracting(first).sorted()
    }

    /// A table of JSON objects: one column per entry of `columns`, titled by `headers` (the
    /// column names when nil), each cell rendered by `cell`.
    public static func objectTable(
        _ rows: [JSONValue], columns: [String], headers: [String]? = nil,
        cell render: (String, JSONValue) -> String = { _, v in cell(v) }
    ) -> String {
        let body = rows.map { row in columns.map { render($0, row[$0] ?? .null) } }
        return table(header: headers ?? columns, rows: body)
    }

    /// Edges (as edge.find returns them) as a table NAME SOURCE DESTINATION RULES KIND.
    public static func edgeTable(_ edges: [JSONValue]) -> String {
        objectTable(
            edges, columns: ["name", "source", "destination", "rules", "kind"],
            headers: ["NAME", "SOURCE", "DESTINATION", "RULES", "KIND"])
    }

    // MARK: - Listings

    /// An object as `name  value` lines, names aligned; nested objects flattened with dotted
    /// names (`bytes_per_owner.alice`), other values as cells. A scalar alone on its line.
    public static func listing(_ value: JSONValue) -> String {
        guard case .object = value else { return cell(value) + "\n" }
        var pairs: [(String, String)] = []
        flatten(value, prefix: "", into: &pairs)
        return aligned(pairs)
    }

    /// `stats` as a listing: a `bytes_per_owner.NAME` line for each owner of `owners`, which
    /// has every owner apart (the map leaves out owners whose names are only canonically
    /// equivalent, as one key would be both), and no line for `owners` itself.
    public static func statsListing(_ stats: JSONValue) -> String {
        guard case .object(var o) = stats, let owners = o.removeValue(forKey: "owners")?.arrayValue else {
            return listing(stats)
        }
        guard !owners.isEmpty else { return listing(.object(o)) }
        o["bytes_per_owner"] = nil
        var pairs: [(String, String)] = []
        let before = o.filter { $0.key < "bytes_per_owner" }
        if !before.isEmpty { flatten(.object(before), prefix: "", into: &pairs) }
        for owner in owners {
            guard let name = owner["owner"]?.stringValue else { continue }
            pairs.append(("bytes_per_owner." + name, cell(owner["bytes"] ?? .null)))
        }
        let rest = o.filter { $0.key > "bytes_per_owner" }
        if !rest.isEmpty { flatten(.object(rest), prefix: "", into: &pairs) }
        return aligned(pairs)
    }

    private static func aligned(_ pairs: [(String, String)]) -> String {
        let width = pairs.map(\.0.count).max() ?? 0
        return pairs.map { name, text in
            name + String(repeating: " ", count: width - name.count) + "  " + text + "\n"
        }.joined()
    }

    private static func flatten(_ value: JSONValue, prefix: String, into pairs: inout [(String, String)]) {
        guard case .object(let o) = value, !o.isEmpty, endText(value) == nil else {
            pairs.append((prefix, cell(value)))
            return
        }
        for key in o.keys.sorted() {
            flatten(o[key]!, prefix: prefix.isEmpty ? key : prefix + "." + key, into: &pairs)  // key from o
        }
    }

    /// An event as one line: its type, then `name=value` for the other members in name order;
    /// a value with spaces or quotes is written as a JSON string.
    public static func eventLine(_ event: JSONValue) -> String {
        guard case .object(let o) = event else { return event.serialized() }
        var parts: [String] = []
        if let type = o["type"] { parts.append(cell(type)) }
        for key in o.keys.sorted() where key != "type" {
            var text = cell(o[key]!)  // key from o
            if case .string(let s) = o[key]!, s.isEmpty || s.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" }) {
                text = JSONValue.string(s).serialized()
            }
            parts.append(key + "=" + text)
        }
        return parts.joined(separator: " ")
    }
}
