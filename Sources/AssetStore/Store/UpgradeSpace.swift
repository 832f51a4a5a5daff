// What the long schema upgrades write, estimated before they start (Schema.swift, `migrate`):
// on a disk without that room they are refused rather than take the reserve and fail.

import GRDB

enum UpgradeSpace {
    /// Bytes an integer takes in a record (SQLite's serial types: 0, 1, 2, 3, 4, 6 or 8).
    static func width(_ low: Int64, _ high: Int64) -> Int64 {
        let m = max(low == .min ? .max : abs(low), high == .min ? .max : abs(high))
        switch m {
        case ..<128: return 1
        case ..<(1 << 15): return 2
        case ..<(1 << 23): return 3
        case ..<(1 << 31): return 4
        case ..<(1 << 47): return 6
        default: return 8
        }
    }

    /// A quarter more than the entries: interior pages, pages not quite full, WAL frame headers.
    static func pages(_ bytes: Int64) -> Int64 { bytes + bytes / 4 }

    /// An upper bound of `v11` from the count alone: every column 8 bytes wide, and every
    /// second file named by two rows. When the disk has this free, no row is read.
    static func v11Bound(files: Int) -> Int64 { pages(Int64(files) * 40 + Int64(files) / 2 * 24) }

    /// An upper bound of `v4` from the count and the database file's size, which holds every
    /// row's text at least once.
    static func v4Bound(objects: Int, fileBytes: Int64) -> Int64 {
        let n = Int64(objects)
        return pages(fileBytes + 64 * n + 5 * (fileBytes + 40 * n))
    }

    /// v11's index over the registry, (inode, device, size) and the row id, each entry sized
    /// by the widest value of each column (a cell's header, length and pointer: 8 bytes), and
    /// file_shared (24 bytes for each file more than one row names). Also the file count.
    static func v11(_ db: Database) throws -> (files: Int, bytes: Int64) {
        guard
            let r = try Row.fetchOne(
                db,
                sql: """
                    SELECT COUNT(*), MIN(inode), MAX(inode), MIN(device), MAX(device), MIN(size), MAX(size), MAX(id)
                    FROM file
                    """)
        else { return (0, 0) }
        let files: Int64 = r[0]
        guard files > 0 else { return (0, 0) }
        let value = { (i: Int) -> Int64 in r[i] ?? 0 }
        let entry =
            8 + width(value(1), value(2)) + width(value(3), value(4)) + width(value(5), value(6))
            + width(0, value(7))
        let shared =
            try Int64.fetchOne(
                db,
                sql: """
                    SELECT COUNT(*) FROM (SELECT 1 FROM file WHERE inode IS NOT NULL AND device IS NOT NULL
                        GROUP BY inode, device HAVING COUNT(*) > 1)
                    """) ?? 0
        return (Int(files), pages(files * entry + shared * 24))
    }

    /// v4's rewrite: every object row written again (its text and 64 bytes), and the built-in
    /// index's five SQLite indexes made on it (collection, key and owner and 40 bytes each at
    /// most). Also the object count.
    static func v4(_ db: Database) throws -> (objects: Int, bytes: Int64) {
        guard
            let r = try Row.fetchOne(
                db,
                sql: """
                    SELECT COUNT(*),
                        TOTAL(length(CAST(value AS BLOB)) + ifnull(length(CAST(metadata AS BLOB)), 0)),
                        TOTAL(length(CAST(collection AS BLOB)) + length(CAST(key AS BLOB)) + length(CAST(owner AS BLOB)))
                    FROM object
                    """)
        else { return (0, 0) }
        let objects: Int64 = r[0]
        let (text, names): (Double, Double) = (r[1], r[2])
        let rows = Int64(text) + Int64(names) + 64 * objects
        return (Int(objects), pages(rows + 5 * (Int64(names) + 40 * objects)))
    }
}
