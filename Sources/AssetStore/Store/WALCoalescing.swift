// Whether the store's writer goes through the WAL write-combining VFS (Sources/CWALCoalesce),
// and why not when it does not. The VFS depends on how SQLite writes WAL frames, which is no
// interface: it is used only with the SQLite versions it was tested with, only when
// `store.coalesce_wal` is on, and only by the connections the store names it for.

import CWALCoalesce
import Foundation
import GRDBSQLite

/// Whether the store's WAL writes are combined (`stats`: wal.coalescing).
public struct WALCoalescing: Sendable, Equatable {
    /// True when the writer's connections use the coalescing VFS.
    public let active: Bool
    /// Why not, when not active.
    public let reason: String?
    /// Whether the reason is worth a warning: the switch is on but this SQLite cannot use it.
    public let fellBack: Bool

    /// The VFS's registered name.
    public static let vfsName = ASSETD_WAL_COALESCE_VFS
    /// The SQLite versions (sqlite3_libversion_number) it was tested with (wal_coalesce.h).
    public static let testedVersions: Range<Int32> = ASSETD_WAL_COALESCE_TESTED_FROM..<ASSETD_WAL_COALESCE_TESTED_BELOW

    static let on = WALCoalescing(active: true, reason: nil, fellBack: false)

    static func off(_ reason: String, fellBack: Bool = false) -> WALCoalescing {
        WALCoalescing(active: false, reason: reason, fellBack: fellBack)
    }

    /// What a store opened with the switch `enabled` uses, given this SQLite's version and
    /// whether it takes URI filenames (the pool names the VFS in one: GRDB opens by path).
    public static func decide(enabled: Bool, readOnly: Bool, sqliteVersion: Int32, takesURIs: Bool) -> WALCoalescing {
        guard enabled else { return off("store.coalesce_wal is false") }
        guard !readOnly else { return off("read-only: nothing is written") }
        guard testedVersions.contains(sqliteVersion) else {
            return off(
                "SQLite \(versionText(sqliteVersion)) is not one it was tested with (\(versionText(testedVersions.lowerBound))"
                    + " up to \(versionText(testedVersions.upperBound)), excluded)", fellBack: true)
        }
        guard takesURIs else { return off("SQLite was built without SQLITE_USE_URI", fellBack: true) }
        return on
    }

    /// Decides for this process's SQLite and registers the VFS when it is used.
    static func resolve(
        enabled: Bool, readOnly: Bool, sqliteVersion: Int32 = sqlite3_libversion_number()
    ) -> WALCoalescing {
        let decided = decide(
            enabled: enabled, readOnly: readOnly, sqliteVersion: sqliteVersion,
            takesURIs: sqlite3_compileoption_used("USE_URI") != 0)
        guard decided.active else { return decided }
        let rc = assetd_wal_coalesce_register()
        return rc == SQLITE_OK ? decided : off("its VFS could not be registered (SQLite error \(rc))", fellBack: true)
    }

    /// 3040001 as "3.40.1".
    static func versionText(_ n: Int32) -> String {
        "\(n / 1_000_000).\(n / 1000 % 1000).\(n % 1000)"
    }

    /// The VFS for `sqlite3_open_v2`: nil (SQLite's default) when not active.
    var vfs: String? { active ? WALCoalescing.vfsName : nil }

    /// What GRDB opens for `path`: when active, a URI naming the VFS (SQLite decodes the
    /// path's %-escapes, which cover `?`, `#` and `%`).
    func poolPath(_ path: String) -> String {
        guard active, let escaped = path.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) else {
            return path
        }
        // "file://" and an empty authority before an absolute path: one starting "//" stays a path.
        return (path.hasPrefix("/") ? "file://" : "file:") + escaped + "?vfs=" + WALCoalescing.vfsName
    }
}
