// The lifetime counters `stats` reports (unlinks done, skipped, failed, deferred; rows
// forgotten; policy deletions), kept in the `counter` table and bumped in the transaction
// that did the work, so they survive restarts and never count work rolled back.

import GRDB

extension Store {
    /// Adds `n` to a `stats` counter, in the caller's transaction. A sum past Int64.max (bytes
    /// of absurd sizes) turns floating point in SQLite: the cast clamps it back.
    static func bump(_ db: Database, _ counter: String, by n: Int64) throws {
        try db.cachedStatement(
            sql: """
                INSERT INTO counter (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = CAST(value + excluded.value AS INTEGER)
                """
        ).execute(arguments: [counter, n])
    }

    /// Lifetime counters: unlinked, skipped_identity_changed, skipped_unsafe_path,
    /// unlink_failures, deferred_open (deferred_open_undetermined of them could not tell),
    /// deferred_leased.
    public func counters() throws -> [String: Int64] {
        try read { r in
            var out = [
                "unlinked": Int64(0), "skipped_identity_changed": 0, "skipped_unsafe_path": 0, "unlink_failures": 0,
                "deferred_open": 0, "deferred_open_undetermined": 0, "deferred_leased": 0,
            ]
            for row in try Row.fetchAll(r.db, sql: "SELECT name, CAST(value AS INTEGER) FROM counter") {
                out[row[0]] = row[1]
            }
            return out
        }
    }
}
