// The files of leases ended since the daemon's last sweep, which that sweep makes due again
// (assetd(8), lease.acquire). Connections can close many times between two sweeps, and a sweep
// can be long, so only the paths are kept, and at most a bounded number of them: past it, the
// sweep makes every row a lease deferred due again instead. That is safe: the unlink checks
// the live leases again, and a row still leased is only deferred again.

/// Paths of ended leases' files, at most `cap` distinct ones; past it, `overflowed`.
public struct EndedLeaseFiles: Sendable {
    /// The most paths kept: 4096 paths of up to 4 KiB each.
    public static let defaultCap = 4096

    public let cap: Int
    /// The ended leases' files, each once, unless `overflowed`.
    public var files: [String] { kept.map(\.string) }
    /// Distinct paths: many connections leasing the same files must not fill the cap. As
    /// bytes: two canonically equivalent paths are two rows, each to be made due again.
    private var kept = Set<UTF8Key>()
    /// More files ended than `cap`: every lease-deferred row is to be made due again.
    public private(set) var overflowed = false

    public init(cap: Int = EndedLeaseFiles.defaultCap) {
        self.cap = cap
    }

    /// Nothing ended.
    public var isEmpty: Bool { kept.isEmpty && !overflowed }

    /// Keeps the files of `leases`, or gives up on paths past `cap`.
    public mutating func add(_ leases: [Lease]) {
        for l in leases where !overflowed {
            for f in l.files { kept.insert(UTF8Key(f)) }
            if kept.count > cap {
                kept = []
                overflowed = true
            }
        }
    }
}
