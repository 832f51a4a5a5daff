// The subordinate uid ranges of control.subuid_file (/etc/subuid: `owner:first:count` a line).
// A user given a range (rootless podman: 65,536 uids) connects from a user namespace as any of
// them, and the kernel reports each as a uid of its own: counted apart, the user would hold
// every per-uid bound that many times over. The daemon counts such a uid as the range's owner,
// its principal, for those bounds only (assetd(8), Access; docs/DESIGN.md); ownership and
// admin status stay the real uid's. Read at start and on SIGHUP.

import Foundation

/// The ranges of a subuid file, and the principal of a uid.
public struct SubordinateRanges: Sendable, Equatable {
    /// A range: `count` uids from `first`, counted as `owner`'s.
    public struct Range: Sendable, Equatable {
        public var first: UInt32
        public var count: UInt32
        public var owner: UInt32
    }

    /// Sorted by `first`; an overlap keeps the range that starts first.
    public private(set) var ranges: [Range] = []

    public init() {}

    /// The ranges of `text`, owners resolved by `uid(of:)` (a numeric owner is its uid); the
    /// lines skipped, one message each ("line N: why").
    public init(text: String, uid: (String) -> UInt32?) {
        var found: [Range] = []
        var skipped: [String] = []
        for (n, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            let fields = line.split(separator: ":", omittingEmptySubsequences: false)
            guard fields.count == 3, !fields[0].isEmpty else {
                skipped.append("line \(n + 1): not owner:first:count")
                continue
            }
            guard let first = UInt32(fields[1]), let count = UInt32(fields[2]), count > 0,
                UInt64(first) + UInt64(count) <= UInt64(UInt32.max)
            else {
                skipped.append("line \(n + 1): the range is not one of uids")
                continue
            }
            let name = String(fields[0])
            guard let owner = UInt32(name) ?? uid(name) else {
                skipped.append("line \(n + 1): no user \(name)")
                continue
            }
            found.append(Range(first: first, count: count, owner: owner))
        }
        found.sort { $0.first < $1.first }
        var kept: [Range] = []
        for r in found {
            if let last = kept.last, UInt64(last.first) + UInt64(last.count) > UInt64(r.first) {
                skipped.append("the range \(r.first)+\(r.count) of uid \(r.owner) overlaps another: skipped")
                continue
            }
            kept.append(r)
        }
        ranges = kept
        self.skipped = skipped
    }

    /// The lines left out, one message each.
    public private(set) var skipped: [String] = []

    /// The uid `uid` is counted as: its range's owner, or itself.
    public func principal(of uid: UInt32) -> UInt32 {
        var (lo, hi) = (0, ranges.count)
        while lo < hi {
            let mid = (lo + hi) / 2
            if ranges[mid].first <= uid { lo = mid + 1 } else { hi = mid }
        }
        guard lo > 0 else { return uid }
        let r = ranges[lo - 1]
        return UInt64(uid) < UInt64(r.first) + UInt64(r.count) ? r.owner : uid
    }

    /// The ranges of the file at `path` ("" or a missing file: none), owners resolved in the
    /// user database; an unreadable file is skipped whole, with the reason.
    public static func load(path: String) -> SubordinateRanges {
        guard !path.isEmpty else { return SubordinateRanges() }
        guard let data = FileManager.default.contents(atPath: path) else {
            var none = SubordinateRanges()
            if FileManager.default.fileExists(atPath: path) { none.skipped = ["cannot read \(path)"] }
            return none
        }
        return SubordinateRanges(text: String(decoding: data, as: UTF8.self), uid: userID(named:))
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
