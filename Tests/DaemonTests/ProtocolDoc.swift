// docs/PROTOCOL.md read as a list of runnable examples. Its fenced blocks come in three kinds,
// told by the word after the fence:
//
//   jsonrpc  a transcript on one connection: `-> ` lines are sent as written, `<- ` lines are
//            what comes back; an indented line continues the message above it (the document
//            folds long messages; on the wire each is one line). Each run of `->` lines is sent
//            before the `<-` lines after it are read.
//   console  shell commands after `$ `, each followed by the lines it prints.
//   python   a program, saved under the name its first line gives (`# name.py: …`), for the
//            console blocks after it to run.
//
// The document's paths are the defaults of a daemon running as root; each is replaced by the
// test daemon's own. Values that differ from run to run match loosely (see `matches`).

import Foundation
import JSON

struct ProtocolDoc {
    static let path: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.appendingPathComponent("docs/PROTOCOL.md").path
    }()

    enum Kind: Equatable {
        case transcript
        case console
        case file(String)
    }

    struct Block {
        /// The line of the opening fence, for messages.
        var line: Int
        var info: String
        var text: String
        var kind: Kind?

        /// The `->` runs and the `<-` lines after each.
        func transcriptGroups() -> [(requests: [String], replies: [String])] {
            var groups = [(requests: [String], replies: [String])]()
            for message in messages() {
                let isRequest = message.hasPrefix("-> ")
                let body = String(message.dropFirst(3))
                if isRequest && (groups.last?.replies.isEmpty ?? false) {
                    groups[groups.count - 1].requests.append(body)
                } else if isRequest {
                    groups.append(([body], []))
                } else if !groups.isEmpty {
                    groups[groups.count - 1].replies.append(body)
                }
            }
            return groups
        }

        /// The messages with their folded lines joined.
        private func messages() -> [String] {
            var out = [String]()
            for line in text.split(separator: "\n") {
                if line.hasPrefix("-> ") || line.hasPrefix("<- ") {
                    out.append(String(line))
                } else if !out.isEmpty, line.first == " " {
                    out[out.count - 1] += " " + line.trimmingCharacters(in: .whitespaces)
                }
            }
            return out
        }

        /// The `$` commands and what each prints.
        func consoleCommands() -> [(text: String, output: [String])] {
            var out = [(text: String, output: [String])]()
            for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
                if line.hasPrefix("$ ") {
                    out.append((String(line.dropFirst(2)), []))
                } else if !out.isEmpty, out[out.count - 1].text.hasSuffix("\\") {
                    out[out.count - 1].text += "\n" + line
                } else if !out.isEmpty {
                    out[out.count - 1].output.append(String(line))
                }
            }
            return out.map { c in
                var output = c.output
                while output.last == "" { output.removeLast() }
                return (c.text, output)
            }
        }
    }

    let blocks: [Block]

    init(contentsOf path: String) throws {
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(
            separator: "\n", omittingEmptySubsequences: false)
        var blocks = [Block]()
        var open: Block?
        for (number, line) in lines.enumerated() {
            if line.hasPrefix("```") {
                if var b = open {
                    b.kind = Self.kind(b.info, b.text)
                    blocks.append(b)
                    open = nil
                } else {
                    open = Block(line: number + 1, info: String(line.dropFirst(3)), text: "")
                }
            } else if open != nil {
                open!.text += line + "\n"
            }
        }
        self.blocks = blocks
    }

    private static func kind(_ info: String, _ text: String) -> Kind? {
        switch info {
        case "jsonrpc": return .transcript
        case "console": return .console
        case "python":
            guard let first = text.split(separator: "\n").first, first.hasPrefix("# "),
                let name = first.dropFirst(2).split(separator: ":").first, name.hasSuffix(".py")
            else { return nil }
            return .file(String(name))
        default: return nil
        }
    }

    /// The paths of a daemon running as root, and the test daemon's in their place.
    struct Places {
        var socket: String
        var root: String
        var state: String

        func apply(_ text: String) -> String {
            text.replacingOccurrences(of: "/run/assetd/control.sock", with: socket)
                .replacingOccurrences(of: "/var/cache/assetd", with: root)
                .replacingOccurrences(of: "/var/lib/assetd", with: state)
        }
    }

    /// Members whose values change from run to run (times, commit numbers, which depend on
    /// when the access times were flushed, file identities, timings): any value of the same
    /// type matches. The document says so where it shows them.
    static let varying: Set<String> = [
        "commit", "created", "modified", "accessed", "queued_at", "next_attempt", "expires", "mtime",
        "device", "inode", "first_seen", "holder",
    ]

    /// Whether `actual` is what `expected` shows: equal, with "…" standing for any value and
    /// members in `varying` matching any value of their type.
    static func matches(_ expected: JSONValue, _ actual: JSONValue, member: String? = nil) -> Bool {
        if expected == .string("…") { return true }
        if let member, varying.contains(member) { return sameType(expected, actual) }
        switch (expected, actual) {
        case (.object(let e), .object(let a)):
            return e.count == a.count && e.allSatisfy { k, v in a[k].map { matches(v, $0, member: k) } ?? false }
        case (.array(let e), .array(let a)):
            return e.count == a.count && zip(e, a).allSatisfy { matches($0, $1) }
        default:
            if let e = expected.doubleValue, let a = actual.doubleValue { return e == a }
            return expected == actual
        }
    }

    private static func sameType(_ e: JSONValue, _ a: JSONValue) -> Bool {
        switch (e, a) {
        case (.int, .int), (.int, .double), (.double, .int), (.double, .double), (.string, .string), (.null, .null),
            (.bool, .bool), (.array, .array), (.object, .object):
            return true
        default: return false
        }
    }
}
