// The subordinate uid ranges of control.subuid_file (/etc/subuid: `owner:first:count` a line).
// A user given a range (rootless podman: 65,536 uids) connects from a user namespace as any of
// them, and the kernel reports each as a uid of its own: counted apart, the range would hold
// every per-uid bound that many times over. The daemon counts the uids of a range as one user
// of its own, its principal, keyed by the range's first uid, for those bounds only (assetd(8),
// Access; docs/DESIGN.md); ownership and admin status stay the real uid's. Keyed by the range,
// not by its owner: a range of root's (or an admin's) sharing root's turns and connections let
// a container queue root's own jobs behind its backlog, and root's connections lock it out. The
// owner is only logged, so a range whose owner is in no user database (podman's `containers`)
// counts all the same. Read at start and on SIGHUP.

import Foundation

/// The ranges of a subuid file, and the principal of a uid.
public struct SubordinateRanges: Sendable, Equatable {
    /// A range: `count` uids from `first`, one principal keyed by `first`.
    public struct Range: Sendable, Equatable {
        public var first: UInt32
        public var count: UInt32
        /// The owner's uid, nil when its name is in no user database: only logged.
        public var owner: UInt32?

        /// Its last uid.
        public var last: UInt32 { first + (count - 1) }

        func contains(_ uid: UInt32) -> Bool { uid >= first && uid - first < count }
    }

    /// Sorted by `first`, none overlapping: a range overlapping an earlier one keeps its own part.
    public private(set) var ranges: [Range] = []
    /// The lines left out, one message each ("line N: why").
    public private(set) var skipped: [String] = []
    /// Oddities of ranges kept (an owner in no user database, an overlap cut), one message each.
    public private(set) var notes: [String] = []

    public init() {}

    /// The ranges of `text`, owners resolved by `uid(of:)` (a numeric owner is its uid), once
    /// a name. A range holding uid 0 or one of `refusing` (the daemon's uid, the admins') is
    /// skipped: its uids would count as one user with no admin, or an admin's turns be a range's.
    public init(text: String, refusing: Set<UInt32> = [], users: [UInt32] = [], uid: (String) -> UInt32?) {
        var found: [(range: Range, line: Int)] = []
        var names: [String: UInt32?] = [:]
        let refused = ([0] + refusing).sorted()
        let known = users.sorted()
        // By the newline byte: "\r\n" is one Character, and a CRLF file would be one line.
        for (n, raw) in text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() {
            let bytes = raw.last == UInt8(ascii: "\r") ? raw.dropLast() : raw
            let line = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            let fields = line.split(separator: ":", omittingEmptySubsequences: false)
            guard fields.count == 3, !fields[0].isEmpty else {
                skipped.append("line \(n + 1): not owner:first:count")
                continue
            }
            guard let first = Self.digits(fields[1]), let count = Self.digits(fields[2]), count > 0,
                UInt64(first) + UInt64(count) <= UInt64(UInt32.max)
            else {
                skipped.append("line \(n + 1): the range is not one of uids")
                continue
            }
            let range = Range(first: first, count: count, owner: nil)
            if let bad = refused.first(where: range.contains) {
                skipped.append("line \(n + 1): the range holds uid \(bad), root's, the daemon's or an admin's")
                continue
            }
            // A user's own uid in a range would count that user, and everyone else there, as one.
            if let user = known.first(where: range.contains) {
                skipped.append("line \(n + 1): the range holds uid \(user), a user of the user database")
                continue
            }
            let name = String(fields[0])
            let owner: UInt32?
            if let known = names[name] {
                owner = known
            } else {
                owner = Self.digits(fields[0]) ?? uid(name)
                names[name] = owner
            }
            if owner == nil { notes.append("line \(n + 1): no user \(name): its range counts as a user all the same") }
            found.append((Range(first: first, count: count, owner: owner), n + 1))
        }
        found.sort { $0.range.first < $1.range.first }
        var kept: [Range] = []
        for (r, line) in found {
            guard let last = kept.last, UInt64(last.first) + UInt64(last.count) > UInt64(r.first) else {
                kept.append(r)
                continue
            }
            let end = UInt64(r.first) + UInt64(r.count)
            let from = UInt64(last.first) + UInt64(last.count)
            guard from < end else {
                skipped.append("line \(line): the range \(r.first)+\(r.count) lies inside another")
                continue
            }
            // Dropped whole, its uids outside the overlap would count one by one again.
            let cut = Range(first: UInt32(from), count: UInt32(end - from), owner: r.owner)
            notes.append("line \(line): the range \(r.first)+\(r.count) overlaps another: counted from \(cut.first)")
            kept.append(cut)
        }
        ranges = kept
    }

    /// `s` as a number of decimal digits only: `UInt32("+5")` is 5 and `UInt32("-0")` is 0.
    static func digits(_ s: Substring) -> UInt32? {
        guard !s.isEmpty, s.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        return UInt32(s)
    }

    /// The range `uid` is in, if any.
    public func range(of uid: UInt32) -> Range? {
        var (lo, hi) = (0, ranges.count)
        while lo < hi {
            let mid = (lo + hi) / 2
            if ranges[mid].first <= uid { lo = mid + 1 } else { hi = mid }
        }
        guard lo > 0, ranges[lo - 1].contains(uid) else { return nil }
        return ranges[lo - 1]
    }

    /// The uid `uid` is counted as: its range's first uid (a uid of the range, so no real
    /// user's), or itself.
    public func principal(of uid: UInt32) -> UInt32 { range(of: uid)?.first ?? uid }

    /// The ranges of the file at `path` ("" or a missing file: none), owners resolved in the
    /// user database; an unreadable file is skipped whole, with the reason.
    public static func load(path: String, refusing: Set<UInt32> = []) -> SubordinateRanges {
        guard !path.isEmpty else { return SubordinateRanges() }
        // Who may write it decides which uids count as one user: judged as the config file is.
        if FileManager.default.fileExists(atPath: path), let why = RootHygiene.changeable(path, uid: getuid()) {
            var none = SubordinateRanges()
            none.skipped = ["not read: \(why)"]
            return none
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            var none = SubordinateRanges()
            if FileManager.default.fileExists(atPath: path) { none.skipped = ["cannot read \(path)"] }
            return none
        }
        return SubordinateRanges(
            text: String(decoding: data, as: UTF8.self), refusing: refusing, users: userIDs(), uid: userID(named:))
    }

    /// The uids of the user database (on the loop, at start and reload: getpwent is not reentrant).
    static func userIDs() -> [UInt32] {
        var out = [UInt32]()
        setpwent()
        defer { endpwent() }
        while let pw = getpwent() { out.append(pw.pointee.pw_uid) }
        return out
    }

    /// The uid of the user named `name`, from the user database.
    static func userID(named name: String) -> UInt32? {
        var pwd = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16_384)
        guard getpwnam_r(name, &pwd, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
        return pwd.pw_uid
    }
}
