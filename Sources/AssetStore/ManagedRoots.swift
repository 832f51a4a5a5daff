// Path normalisation and confinement (SPEC §1): every file path is absolute, normalised,
// free of "..", and lies strictly below one configured managed root.

import Foundation

/// The managed roots and the rules for accepting a file path.
public struct ManagedRoots: Sendable, Hashable {
    /// The roots, normalised, longest first so the most specific root matches.
    public let paths: [String]

    /// Normalises each root; a root that is not an absolute path is `invalid_path`.
    public init(_ roots: [String]) throws(StoreError) {
        var out = [String]()
        for r in roots {
            let n = try ManagedRoots.normalise(r)
            guard n != "/" else { throw StoreError(.invalidPath, "the file system root cannot be a managed root") }
            if !out.contains(n) { out.append(n) }
        }
        paths = out.sorted { $0.count > $1.count }
    }

    /// Normalises a reference and checks it lies below a root.
    public func accept(_ reference: String) throws(StoreError) -> (path: String, root: String) {
        let path = try ManagedRoots.normalise(reference)
        guard let root = root(of: path) else {
            throw StoreError(.pathOutsideRoots, "\(path) is not under a managed root", detail: .string(path))
        }
        return (path, root)
    }

    /// The root a normalised path lies strictly below, if any.
    public func root(of path: String) -> String? {
        paths.first { path.count > $0.count && path.hasPrefix($0) && path.utf8[path.utf8.index(path.utf8.startIndex, offsetBy: $0.utf8.count)] == UInt8(ascii: "/") }
    }

    /// `/abs/path` or `file:///abs/path` (percent-decoded) to its normal form: repeated `/`
    /// folded, `.` dropped, trailing `/` dropped. `..`, relative paths and NUL are refused.
    public static func normalise(_ reference: String) throws(StoreError) -> String {
        var raw = reference
        if raw.hasPrefix("file://") {
            var rest = String(raw.dropFirst("file://".count))
            if rest.hasPrefix("localhost/") { rest = String(rest.dropFirst("localhost".count)) }
            guard rest.hasPrefix("/") else {
                throw StoreError(.invalidPath, "a file URL must name a local absolute path", detail: .string(reference))
            }
            raw = try percentDecode(rest, original: reference)
        }
        guard raw.hasPrefix("/") else {
            throw StoreError(.invalidPath, "\"\(reference)\" is not an absolute path", detail: .string(reference))
        }
        guard !raw.utf8.contains(0) else { throw StoreError(.invalidPath, "the path contains a NUL byte") }
        var parts = [Substring]()
        for part in raw.split(separator: "/", omittingEmptySubsequences: true) {
            if part == "." { continue }
            if part == ".." {
                throw StoreError(.invalidPath, "\"..\" is not allowed in a path", detail: .string(reference))
            }
            parts.append(part)
        }
        let path = "/" + parts.joined(separator: "/")
        guard path.utf8.count < Int(PATH_MAX) else { throw StoreError(.invalidPath, "the path is too long") }
        return path
    }

    static func percentDecode(_ s: String, original: String) throws(StoreError) -> String {
        guard s.contains("%") else { return s }
        var bytes = [UInt8]()
        var it = Array(s.utf8)[...]
        while let b = it.popFirst() {
            if b == UInt8(ascii: "%") {
                guard it.count >= 2, let v = UInt8(String(decoding: it.prefix(2), as: UTF8.self), radix: 16) else {
                    throw StoreError(.invalidPath, "bad percent escape in file URL", detail: .string(original))
                }
                bytes.append(v)
                it = it.dropFirst(2)
            } else {
                bytes.append(b)
            }
        }
        guard let decoded = String(validating: bytes, as: UTF8.self) else {
            throw StoreError(.invalidPath, "the file URL does not decode to UTF-8", detail: .string(original))
        }
        return decoded
    }
}
