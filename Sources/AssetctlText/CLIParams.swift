// Turning command-line words into request params: PARAM values (JSON, else a string), JSON
// arguments, `--file` paths merged into an object's value, rule lists and paths.
// Pure functions, so the CLI's argument handling is tested without a daemon.

import JSON

/// A command-line argument that cannot become a param; the CLI reports it as a usage error.
public struct CLIParamError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was wrong, for people.
    public var message: String

    public init(_ message: String) { self.message = message }

    public var description: String { message }
}

/// Conversions from argument text to params.
public enum CLIParams {
    /// A query PARAM: the text parsed as JSON if it is JSON, else the text as a string
    /// (`42` is a number, `"42"` and `alice` are strings, `[1,2]` an array). JSON holding a
    /// number assetd cannot keep exactly (`1e400`) is refused: its parsed value would be null.
    public static func parseParam(_ text: String) throws(CLIParamError) -> JSONValue {
        guard let value = try? JSONValue.parse(text) else { return .string(text) }
        try refuseInexact(text, what: "PARAM \(text)")
        return value
    }

    /// Throws when `text`, valid JSON, holds a number that would not read back as written.
    private static func refuseInexact(_ text: String, what: String) throws(CLIParamError) {
        var copy = text
        if let (path, number) = copy.withUTF8({ JSONValue.firstInexactNumber($0) }) {
            throw CLIParamError(
                "\(what) holds \(number) at \(path.isEmpty ? "its top" : path), a number assetd cannot keep exactly; write it as a string"
            )
        }
    }

    /// An argument that must be JSON; `what` names it in the error (`VALUE_JSON`, `--meta`).
    public static func parseJSON(_ text: String, what: String) throws(CLIParamError) -> JSONValue {
        do {
            let value = try JSONValue.parse(text)
            // Sent on, it would be refused (or, written from its value, changed): said here.
            try refuseInexact(text, what: what)
            return value
        } catch let e as CLIParamError {
            throw e
        } catch {
            // A bare word is most likely a string without its JSON quotes.
            let bare = text.first.map { $0.isLetter } ?? false
            let hint = bare && !text.contains("'") ? "; a JSON string needs quotes: '\"\(text)\"'" : ""
            throw CLIParamError("\(what) is not valid JSON: \(error)\(hint)")
        }
    }

    /// `value` with `files` added to its `file` field: a single path stays a string, more
    /// than one make an array; an existing string or array is extended. The value must be
    /// an object when there are files to add.
    public static func addFiles(_ files: [String], to value: JSONValue) throws(CLIParamError) -> JSONValue {
        guard !files.isEmpty else { return value }
        guard case .object(var members) = value else {
            throw CLIParamError("--file needs the value to be a JSON object")
        }
        var paths: [JSONValue]
        switch members["file"] {
        case nil, .null?: paths = []
        case .string(let s)?: paths = [.string(s)]
        case .array(let a)?: paths = a
        case let other?:
            throw CLIParamError("the value's file field is \(other.serialized()), not a path or an array of paths")
        }
        paths += files.map(JSONValue.string)
        members["file"] = paths.count == 1 ? paths[0] : .array(paths)
        return .object(members)
    }

    /// Rule names from `--rules` options, each a comma-separated list (`a,b`); blanks dropped.
    public static func ruleNames(_ lists: [String]) -> [String] {
        lists.flatMap { $0.split(separator: ",") }.map { $0.trimmingSpaces }.filter { !$0.isEmpty }
    }

    /// `path` made absolute against `cwd` (the daemon has another working folder). Nothing
    /// else changes: the daemon normalises and judges the path. A `file://` URL, which the
    /// daemon takes as well, is passed on as it is.
    public static func absolutePath(_ path: String, cwd: String) -> String {
        if path.hasPrefix("/") || path.isEmpty || path.hasPrefix("file://") { return path }
        var relative = Substring(path)
        while relative.hasPrefix("./") { relative = relative.dropFirst(2) }
        if relative == "." { return cwd }
        return cwd.hasSuffix("/") ? cwd + relative : cwd + "/" + relative
    }

    /// `{"collection": …, "key": …}`.
    public static func ref(_ collection: String, _ key: String) -> JSONValue {
        .object(["collection": .string(collection), "key": .string(key)])
    }
}

extension StringProtocol {
    /// The text without leading and trailing spaces and tabs.
    var trimmingSpaces: String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = firstIndex(where: { !isSpace($0) }) else { return "" }
        let last = lastIndex(where: { !isSpace($0) })!  // exists: `first` does
        return String(self[first...last])
    }
}
