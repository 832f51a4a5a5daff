// Paths into a JSON value, for template fields and index columns: a top-level field name
// ("originalKey") or a JSON path ("$.a.b", "$.list[2]", "$.\"odd key\"").

/// A parsed path to a member of a JSON value.
public struct JSONPath: Sendable, Hashable, CustomStringConvertible {
    /// One step of a path.
    public enum Component: Sendable, Hashable {
        /// An object member.
        case member(String)
        /// An array element.
        case element(Int)
    }

    /// The steps from the root.
    public let components: [Component]
    /// The text it was parsed from.
    public let text: String

    /// Parses a field name or `$`-path; nil when the text is not a valid path.
    public init?(_ text: String) {
        self.text = text
        guard text.hasPrefix("$") else {
            guard !text.isEmpty else { return nil }
            components = [.member(text)]
            return
        }
        var parts = [Component]()
        var rest = Substring(text.dropFirst())
        while let first = rest.first {
            if first == "." {
                rest = rest.dropFirst()
                if rest.first == "\"" {
                    rest = rest.dropFirst()
                    guard let end = rest.firstIndex(of: "\"") else { return nil }
                    parts.append(.member(String(rest[..<end])))
                    rest = rest[rest.index(after: end)...]
                } else {
                    let end = rest.firstIndex(where: { $0 == "." || $0 == "[" }) ?? rest.endIndex
                    let name = rest[..<end]
                    guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" })
                    else { return nil }
                    parts.append(.member(String(name)))
                    rest = rest[end...]
                }
            } else if first == "[" {
                guard let end = rest.firstIndex(of: "]"), let i = Int(rest[rest.index(after: rest.startIndex)..<end]),
                    i >= 0
                else { return nil }
                parts.append(.element(i))
                rest = rest[rest.index(after: end)...]
            } else {
                return nil
            }
        }
        guard !parts.isEmpty else { return nil }
        components = parts
    }

    public var description: String { text }

    /// The path in SQLite's JSON path syntax, for json_extract.
    public var sqlitePath: String {
        var s = "$"
        for c in components {
            switch c {
            case .member(let m): s += ".\"" + m.filter { $0 != "\"" } + "\""
            case .element(let i): s += "[\(i)]"
            }
        }
        return s
    }

    /// The value at this path, or nil when some step is missing.
    public func value(in root: JSONValue) -> JSONValue? {
        var v = root
        for c in components {
            switch (c, v) {
            case (.member(let m), .object(let o)):
                guard let next = o[m] else { return nil }
                v = next
            case (.element(let i), .array(let a)):
                guard i < a.count else { return nil }
                v = a[i]
            default: return nil
            }
        }
        return v
    }

    /// Replaces the value at this path by `transform(old)`; unchanged when the path is missing.
    public func updating(_ root: JSONValue, _ transform: (JSONValue) -> JSONValue) -> JSONValue {
        update(root, components[...], transform)
    }

    private func update(
        _ v: JSONValue, _ rest: ArraySlice<Component>, _ transform: (JSONValue) -> JSONValue
    )
        -> JSONValue
    {
        guard let c = rest.first else { return transform(v) }
        switch (c, v) {
        case (.member(let m), .object(var o)):
            guard let child = o[m] else { return v }
            o[m] = update(child, rest.dropFirst(), transform)
            return .object(o)
        case (.element(let i), .array(var a)):
            guard i < a.count else { return v }
            a[i] = update(a[i], rest.dropFirst(), transform)
            return .array(a)
        default:
            return v
        }
    }
}
