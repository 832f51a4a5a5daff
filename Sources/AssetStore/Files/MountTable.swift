// Where a path lies on its file system, as /proc/self/mountinfo tells it: a bind mount shows a
// folder of a file system at a second path, which no path string (resolved or not) reveals.
// A path's place is its file system (major:minor, not st_dev: btrfs subvolumes each report
// their own st_dev) and its path from that file system's root (docs/DESIGN.md, "Roots").

import Glibc

/// Where a path lies: its file system and its path from that file system's own root.
public struct FileSystemPlace: Sendable, Equatable {
    /// The file system, "major:minor" as /proc/self/mountinfo gives it.
    public var device: String
    /// The path from the file system's root, as bytes ("/" for the root itself).
    public var path: [UInt8]
    /// The mount it was seen through: where it is mounted, and which folder of its file
    /// system it shows there (the mount's root).
    public var mountPoint: String
    public var mountRoot: String

    /// True when `other` is this folder or lies below it: the same file system, and this
    /// path a prefix of the other's, component by component.
    public func holds(_ other: FileSystemPlace) -> Bool {
        guard device == other.device else { return false }
        if path == [UInt8(ascii: "/")] || path == other.path { return true }
        return other.path.count > path.count + 1 && other.path.starts(with: path)
            && other.path[path.count] == UInt8(ascii: "/")
    }

    /// For messages: "/media/sub of the file system 8:1 (mounted at /srv/b from /media/sub)".
    public var description: String {
        let at = String(decoding: path, as: UTF8.self)
        return "\(at) of the file system \(device) (mounted at \(mountPoint) from \(mountRoot))"
    }
}

/// The mounts this process sees (/proc/self/mountinfo).
public struct MountTable: Sendable {
    /// One line of mountinfo: its mount id, file system, the folder of that file system it
    /// shows (its root) and where.
    struct Entry: Sendable {
        var id: UInt64
        var device: String
        var root: [UInt8]
        var point: [UInt8]
    }

    let entries: [Entry]

    /// The table as it is now; nil where /proc/self/mountinfo cannot be read.
    public static func current() -> MountTable? {
        guard let f = fopen("/proc/self/mountinfo", "re") else { return nil }
        defer { fclose(f) }
        var bytes = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = fread(&chunk, 1, chunk.count, f)
            if n > 0 { bytes += chunk[..<n] }
            if n < chunk.count { break }
        }
        guard ferror(f) == 0 else { return nil }
        return MountTable(mountinfo: bytes)
    }

    /// The table a mountinfo text describes (proc(5)): "id parent major:minor root point ...".
    init(mountinfo: [UInt8]) {
        var out = [Entry]()
        for line in mountinfo.split(separator: UInt8(ascii: "\n")) {
            let fields = line.split(separator: UInt8(ascii: " "), maxSplits: 5)
            guard fields.count >= 5, let id = UInt64(String(decoding: fields[0], as: UTF8.self)) else { continue }
            out.append(
                Entry(
                    id: id, device: String(decoding: fields[2], as: UTF8.self), root: Self.unescape(fields[3]),
                    point: Self.unescape(fields[4])))
        }
        entries = out
    }

    /// mountinfo writes a space, tab, newline and backslash in a path as \ooo (octal).
    static func unescape(_ field: ArraySlice<UInt8>) -> [UInt8] {
        var out = [UInt8]()
        var i = field.startIndex
        while i < field.endIndex {
            let b = field[i]
            if b == UInt8(ascii: "\\"), field.endIndex - i >= 4,
                let v = UInt8(String(decoding: field[(i + 1)...(i + 3)], as: UTF8.self), radix: 8)
            {
                out.append(v)
                i += 4
            } else {
                out.append(b)
                i += 1
            }
        }
        return out
    }

    /// Where `path` lies: resolved (realpath) up to the deepest folder that exists, which is
    /// looked up by its mount id (statx STATX_MNT_ID, or /proc/self/fdinfo before Linux 5.8),
    /// else by the longest mount point above it; the names not made yet follow it. Nil when
    /// no folder of the path can be resolved or no mount holds it.
    public func place(of path: String) -> FileSystemPlace? {
        var existing = path
        var rest = [String]()
        var resolved: String?
        while resolved == nil {
            if let r = realpath(existing, nil) {
                resolved = String(cString: r)
                free(r)
                break
            }
            guard errno == ENOENT || errno == ENOTDIR else { return nil }
            let parts = existing.split(separator: "/", omittingEmptySubsequences: true)
            guard let last = parts.last else { return nil }
            rest.insert(String(last), at: 0)
            existing = "/" + parts.dropLast().joined(separator: "/")
        }
        guard let real = resolved else { return nil }
        var full = Array(real.utf8)
        for name in rest where name != "." {
            if name == ".." {  // below a name not made yet: folded as written
                full = Array(full[..<(full.lastIndex(of: UInt8(ascii: "/")) ?? 0)])
                if full.isEmpty { full = [UInt8(ascii: "/")] }
                continue
            }
            if full != [UInt8(ascii: "/")] { full.append(UInt8(ascii: "/")) }
            full += Array(name.utf8)
        }
        let id = (try? FileStatus.of(real).get())?.mountID
        guard let entry = entries.last(where: { $0.id == id }) ?? longestPoint(above: Array(real.utf8)),
            Self.isAtOrBelow(Array(real.utf8), entry.point)
        else { return nil }
        var inside = entry.root
        let below = full.dropFirst(entry.point == [UInt8(ascii: "/")] ? 0 : entry.point.count)
        if inside == [UInt8(ascii: "/")], !below.isEmpty { inside = [] }
        inside += below
        return FileSystemPlace(
            device: entry.device, path: inside, mountPoint: String(decoding: entry.point, as: UTF8.self),
            mountRoot: String(decoding: entry.root, as: UTF8.self))
    }

    /// The mount whose point is the longest one at or above `path`; of mounts at one point,
    /// the last (mounted over the others).
    private func longestPoint(above path: [UInt8]) -> Entry? {
        var best: Entry?
        for e in entries where Self.isAtOrBelow(path, e.point) && e.point.count >= (best?.point.count ?? 0) {
            best = e
        }
        return best
    }

    /// True when `path` is `folder` or lies below it (bytes, component-wise).
    static func isAtOrBelow(_ path: [UInt8], _ folder: [UInt8]) -> Bool {
        if folder == [UInt8(ascii: "/")] || path == folder { return true }
        return path.count > folder.count + 1 && path.starts(with: folder) && path[folder.count] == UInt8(ascii: "/")
    }
}
