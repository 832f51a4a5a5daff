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

    /// SQL for the bytes that names of one file count beyond the file (SharedFiles.swift):
    /// for each identity listed as shared, its rows' sizes less the largest. `filter`, an SQL
    /// condition on `f` (a row of `file`), narrows the rows counted. With `sharedFirst`, the
    /// list is read and each identity's rows looked up (for a filter that keeps most rows);
    /// else the rows the filter names, each looked up in the list (an owner's files).
    /// SQLite keeps no statistics here, so it is told: left to choose, it read every row of
    /// `file` for the whole table's excess.
    static func excess(where filter: String = "1", sharedFirst: Bool = true) -> String {
        """
        SELECT TOTAL(x) FROM (SELECT TOTAL(f.size) - MAX(f.size) AS x FROM file_shared s
            \(sharedFirst ? "CROSS JOIN" : "JOIN") file f ON f.inode = s.inode AND f.device = s.device WHERE \(filter)
            GROUP BY \(SharedFiles.identity("f")))
        """
    }

    /// SQL for the bytes of every registered file, each file counted once however many names
    /// it has: the budget's measure.
    static let registered = "SELECT CAST(TOTAL(size) - (\(excess())) AS INTEGER) FROM file"
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
