// Path normalisation and confinement (assetd(8), DATA MODEL, Files): every file path is
// absolute, normalised, free of "..", and lies strictly below one configured managed root.
// Paths are byte strings to the kernel: everything here splits and compares UTF-8 bytes,
// never Characters ("/" followed by a combining mark is one Character, and canonically equal
// strings can differ in bytes).

import Foundation

/// The managed roots and the rules for accepting a file path.
public struct ManagedRoots: Sendable, Hashable {
    /// The roots, normalised, longest first (a nested root's orphan walk comes before its outer root's).
    public let paths: [String]

    /// The folder each root named when the store opened (ManagedRoots+Pins.swift); not part
    /// of equality.
    public let pins = RootPins()

    public static func == (a: ManagedRoots, b: ManagedRoots) -> Bool { a.paths == b.paths }

    public func hash(into h: inout Hasher) { h.combine(paths) }

    /// Normalises each root; a root that is not an absolute path is `invalid_path`.
    public init(_ roots: [String]) throws(StoreError) {
        var out = [String]()
        for r in roots {
            let n = try ManagedRoots.normalise(r)
            guard n != "/" else { throw StoreError(.invalidPath, "the file system root cannot be a managed root") }
            if !out.contains(where: { $0.utf8.elementsEqual(n.utf8) }) { out.append(n) }
        }
        paths = out.sorted { $0.utf8.count > $1.utf8.count }
    }

    /// Normalises a reference and checks it lies below a root.
    public func accept(_ reference: String) throws(StoreError) -> (path: String, root: String) {
        let path = try ManagedRoots.normalise(reference)
        guard let root = root(of: path) else {
            // Naming the roots tells a user whose path looked right where files must go.
            throw StoreError(
                .pathOutsideRoots,
                "\(path) is not under a managed root (roots: \(paths.reversed().joined(separator: ", ")))",
                detail: .string(path))
        }
        return (path, root)
    }

    /// The root a normalised path is confined to, if any (compared as bytes): of nested roots
    /// the outermost, because an inner root lies in folders the outer root's clients write and
    /// may be swapped for a symlink; so every folder below the outermost root is checked.
    public func root(of path: String) -> String? {
        paths.last { ManagedRoots.isBelow(path, $0) }
    }

    /// The most specific root a normalised path lies strictly below, if any: the one whose
    /// orphan walk judges the path.
    func nearestRoot(of path: String) -> String? {
        paths.first { ManagedRoots.isBelow(path, $0) }
    }

    /// Every root a normalised path lies strictly below, the nearest first: a nested root
    /// missing hides its files as an outer one does.
    func roots(of path: String) -> [String] {
        paths.filter { ManagedRoots.isBelow(path, $0) }
    }

    /// Whether `prefix` (bytes of a normalised path) is a configured root itself.
    func isRoot(_ prefix: [UInt8]) -> Bool {
        paths.contains { $0.utf8.elementsEqual(prefix) }
    }

    /// Why two roots meet through a symlink, if they do: two roots that are one
    /// folder, or one inside the other, give a file two paths (two registry rows), and one
    /// path's holders going would unlink a file the other's still hold; a nested root that is
    /// not where its path says below the outer one (a symlink on the way) would have all its
    /// files refused. Judged on where the kernel resolves each root now (realpath), and on
    /// device and inode for one folder under two paths without a symlink (a bind mount), and
    /// on the file system for one inside the other through a bind mount (`mountAlias`); a
    /// root that does not exist yet is not judged.
    public func symlinkConflict() -> String? {
        let resolved: [[UInt8]?] = paths.map { p in
            guard let r = realpath(p, nil) else { return nil }
            defer { free(r) }
            return Array(String(cString: r).utf8)
        }
        // One folder under two paths without a symlink (a bind mount): same device and inode.
        let folders: [[UInt64]?] = paths.map { p in
            var st = stat()
            return stat(p, &st) == 0 ? [UInt64(st.st_dev), UInt64(st.st_ino)] : nil
        }
        // Every folder is inside / (which isBelow does not see): such a root is / itself.
        if let i = resolved.firstIndex(where: { $0 == [UInt8(ascii: "/")] }) {
            return "\(paths[i]) is, through a symlink, the file system root, which cannot be a managed root"
        }
        for i in paths.indices {
            for j in paths.indices where i != j {
                guard let ri = resolved[i], let rj = resolved[j] else { continue }
                let inner = Array(paths[i].utf8)
                if ManagedRoots.isBelow(inner, paths[j]) {
                    if ri != rj + inner.dropFirst(paths[j].utf8.count) {
                        return
                            "\(paths[i]) is reached through a symlink below \(paths[j]): every file under it would be refused"
                    }
                } else if !ManagedRoots.isBelow(Array(paths[j].utf8), paths[i]),
                    ri == rj || ManagedRoots.isBelow(ri, String(decoding: rj, as: UTF8.self))
                {
                    let how = ri == rj ? "the same folder as" : "inside"
                    return "\(paths[i]) is, through a symlink, \(how) \(paths[j]): a file there would have two paths"
                }
            }
        }
        // Checked after the symlinks, which say more.
        for i in paths.indices {
            for j in paths.indices where i < j {
                if let a = folders[i], a == folders[j] {
                    return
                        "\(paths[i]) is the same folder as \(paths[j]) (a bind mount?): a file there would have two paths"
                }
            }
        }
        // One inside the other through a bind mount: only the mount table tells.
        return mountAlias(MountTable.current())
    }

    /// `isBelow` on native strings' bytes in place: every put asks it of every path it names,
    /// and copying the path to an array cost more than the compare.
    static func isBelow(_ path: String, _ root: String) -> Bool {
        let r = root.utf8.count
        guard path.utf8.count > r + 1 else { return false }
        let inPlace = path.utf8.withContiguousStorageIfAvailable { p in
            root.utf8.withContiguousStorageIfAvailable { q in
                p[r] == UInt8(ascii: "/") && (r == 0 || memcmp(p.baseAddress!, q.baseAddress!, r) == 0)
            }
        }
        if let inPlace, let below = inPlace { return below }
        return isBelow(Array(path.utf8), root)
    }

    private static func isBelow(_ p: [UInt8], _ root: String) -> Bool {
        let r = Array(root.utf8)
        return p.count > r.count + 1 && p.starts(with: r) && p[r.count] == UInt8(ascii: "/")
    }

    /// The components of a normalised path below `root`, split on "/" bytes.
    static func components(of path: String, below root: String) -> [String] {
        let skip = root.utf8.count
        // A native string's bytes read through a pointer: copying them to an array, splitting
        // that and mapping the slices cost three arrays a path (every probe splits its path).
        if let parts = path.utf8.withContiguousStorageIfAvailable({
            split(UnsafeBufferPointer(rebasing: $0.dropFirst(skip)))
        }) {
            return parts
        }
        return split(Array(path.utf8.dropFirst(skip)))
    }

    /// The non-empty runs between "/" bytes, as strings (split at an ASCII byte: each part
    /// stays valid UTF-8).
    private static func split<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> [String] {
        var parts = [String]()
        var start = bytes.startIndex
        var i = start
        while i != bytes.endIndex {
            if bytes[i] == UInt8(ascii: "/") {
                if start != i { parts.append(String(decoding: bytes[start..<i], as: UTF8.self)) }
                start = bytes.index(after: i)
            }
            i = bytes.index(after: i)
        }
        if start != bytes.endIndex { parts.append(String(decoding: bytes[start...], as: UTF8.self)) }
        return parts
    }

    /// `/abs/path` or `file:///abs/path` (percent-decoded) to its normal form: repeated `/`
    /// folded, `.` dropped, trailing `/` dropped. `..`, relative paths and NUL are refused.
    public static func normalise(_ reference: String) throws(StoreError) -> String {
        // Most references are normal already (every put names its files): one pass over the
        // bytes instead of splitting and joining them.
        if isNormal(reference) { return reference }
        return try normaliseComponents(reference)
    }

    /// True when `path` is its own normal form: `/`, or absolute with no NUL and no empty,
    /// `.` or `..` component (so no trailing `/`), shorter than PATH_MAX.
    static func isNormal(_ path: String) -> Bool {
        // A native string's bytes read through a pointer: the view's iterator cost about 20
        // instructions a byte.
        if let normal = path.utf8.withContiguousStorageIfAvailable({ isNormal($0) }) { return normal }
        return isNormal(path.utf8)
    }

    private static func isNormal<Bytes: Collection<UInt8>>(_ utf8: Bytes) -> Bool {
        guard utf8.first == UInt8(ascii: "/"), utf8.count < Int(PATH_MAX) else { return false }
        var length = 0
        var dots = 0
        for b in utf8.dropFirst() {
            if b == UInt8(ascii: "/") {
                if length == 0 || (dots == length && dots <= 2) { return false }
                length = 0
                dots = 0
            } else {
                if b == 0 { return false }
                length += 1
                if b == UInt8(ascii: ".") { dots += 1 }
            }
        }
        return utf8.count == 1 || (length != 0 && !(dots == length && dots <= 2))  // "/" is normal
    }

    /// `normalise` the long way: split into components and joined again.
    static func normaliseComponents(_ reference: String) throws(StoreError) -> String {
        // Prefixes compared as bytes, as the kernel reads a path: a String's `hasPrefix` compares
        // Characters, and "/" followed by a combining mark is one Character, not "/".
        func starts(_ s: String, with prefix: String) -> Bool { s.utf8.starts(with: prefix.utf8) }
        var raw = reference
        if starts(raw, with: "file://") {
            var rest = String(decoding: raw.utf8.dropFirst("file://".utf8.count), as: UTF8.self)
            if starts(rest, with: "localhost/") {
                rest = String(decoding: rest.utf8.dropFirst("localhost".utf8.count), as: UTF8.self)
            }
            guard starts(rest, with: "/") else {
                throw StoreError(.invalidPath, "a file URL must name a local absolute path", detail: .string(reference))
            }
            raw = try percentDecode(rest, original: reference)
        }
        guard starts(raw, with: "/") else {
            throw StoreError(.invalidPath, "\"\(reference)\" is not an absolute path", detail: .string(reference))
        }
        guard !raw.utf8.contains(0) else { throw StoreError(.invalidPath, "the path contains a NUL byte") }
        var bytes = [UInt8]()
        for part in Array(raw.utf8).split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true) {
            if part.elementsEqual([46]) { continue }  // "."
            if part.elementsEqual([46, 46]) {  // ".."
                throw StoreError(.invalidPath, "\"..\" is not allowed in a path", detail: .string(reference))
            }
            bytes.append(UInt8(ascii: "/"))
            bytes.append(contentsOf: part)
        }
        let path = bytes.isEmpty ? "/" : String(decoding: bytes, as: UTF8.self)
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
