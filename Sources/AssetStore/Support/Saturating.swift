// Byte totals that cannot overflow. A file's size is whatever its owner made it (a sparse
// file may claim up to 2^63-1 bytes; the probe caps a recorded size at `Sizes.maxFile`), an
// object counts each of its files and a file held by several objects counts in each: a sum
// of sizes may pass Int64.max, and Swift stops the process on an overflowing `+`, SQLite's
// SUM fails the statement. Totals saturate instead: an absurd total still reads as "too
// much", which is all a budget needs.

enum Sizes {
    /// The largest size recorded for one file (file_identity.c caps it there): 8 PiB, more
    /// than any real file, and a double holds every size up to it exactly.
    static let maxFile: Int64 = 1 << 53

    /// SQL for the sum of `column` over a group that never fails: TOTAL adds as floating
    /// point, the cast back clamps at Int64.max (an empty group gives 0). Exact below 2^53.
    static func sum(_ column: String) -> String { "CAST(TOTAL(\(column)) AS INTEGER)" }

    /// SQL grouping rows of `alias` (of `file` or `unlink_queue`) by file: names of one file
    /// (hard links, a name renamed and named again) share its device and inode; a row without
    /// an inode (a missing file) is a file of its own.
    static func identity(_ alias: String) -> String {
        "\(alias).inode, \(alias).device, CASE WHEN \(alias).inode IS NULL THEN \(alias).id END"
    }

    /// SQL for the bytes of every registered file, each file counted once however many names
    /// it has: the budget's measure. One pass over the index `file_identity` (inode, device,
    /// size), in its order: no sort.
    static let registered = """
        SELECT CAST((SELECT TOTAL(s) FROM (SELECT MAX(size) AS s FROM file WHERE inode IS NOT NULL GROUP BY inode, device))
            + (SELECT TOTAL(size) FROM file WHERE inode IS NULL) AS INTEGER)
        """
}

extension Int64 {
    /// `self + other`, clamped at the bounds instead of overflowing.
    func adding(saturating other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : sum
    }

    /// `self - other`, clamped at the bounds instead of overflowing.
    func subtracting(saturating other: Int64) -> Int64 {
        let (difference, overflow) = subtractingReportingOverflow(other)
        return overflow ? (other < 0 ? .max : .min) : difference
    }
}
