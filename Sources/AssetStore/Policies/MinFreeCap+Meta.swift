// A cap outlives a restart: one `meta` row per root (`min_free_cap:` and the root's path, not
// its device number, which a reboot may change), written in the batch of the run that engages
// or lifts it. Were it only in memory, the first run after a restart would engage a new
// cap at the room free then, and what the cache had added meanwhile would be kept for good:
// restart after restart, the disk would fill.

import GRDB
import Glibc

extension MinFreeCap {
    static let metaPrefix = "min_free_cap:"

    /// `min_free`, and the room and the share when the cap engaged, as recorded.
    var metaValue: String { "\(minFree) \(engagedRoom) \(engagedShare)" }
}

extension Store {
    /// Loads the caps recorded for the roots at open. Those recorded for another `min_free` than
    /// the configured one are deleted; with none configured (a tool's open), nothing is loaded.
    func loadMinFreeCaps(_ db: Database) throws {
        guard let minFree = configuration.policy?.minFree else { return }
        let prefix = MinFreeCap.metaPrefix
        let rows = try Row.fetchAll(
            db, sql: "SELECT key, CAST(value AS TEXT) AS value FROM meta WHERE substr(key, 1, ?) = ?",
            arguments: [prefix.utf8.count, prefix])
        var caps = [String: MinFreeCap]()
        for row in rows {
            let key: String = row["key"]
            let root = String(key.dropFirst(prefix.count))
            let numbers = (row["value"] as String? ?? "").split(separator: " ").compactMap { Int64($0) }
            var st = stat()
            guard numbers.count == 3, numbers[0] == minFree, roots.paths.contains(root) else {
                try db.execute(sql: "DELETE FROM meta WHERE key = ?", arguments: [key])
                continue
            }
            guard stat(root, &st) == 0 else { continue }  // kept for when it is mounted again
            caps[root] = MinFreeCap(
                device: Int64(bitPattern: UInt64(st.st_dev)), root: root, minFree: minFree, cap: numbers[1],
                share: numbers[2], reachable: numbers[1].adding(saturating: numbers[2]), engagedRoom: numbers[1],
                engagedShare: numbers[2])
        }
        state.withLock { $0.minFreeCaps = caps }
    }

    /// Records `cap` for its root in the run's batch unless the row already says so (what is
    /// recorded does not move while it holds). Compared with the row, not with the cap in
    /// memory: a batch that rolled back after its judgement kept the memory's, not the row.
    func recordMinFreeCap(_ cap: MinFreeCap, _ db: Database, _ run: PolicyRun) throws {
        try db.execute(
            sql: """
                INSERT INTO meta(key, value) VALUES (?1, ?2)
                ON CONFLICT(key) DO UPDATE SET value = excluded.value WHERE CAST(value AS TEXT) IS NOT excluded.value
                """,
            arguments: [MinFreeCap.metaPrefix + cap.root, cap.metaValue])
        if db.changesCount > 0 { run.recordedInBatch = true }
    }

    /// Deletes the cap recorded for `root`, if any, in the run's batch.
    func forgetMinFreeCap(root: String, _ db: Database, _ run: PolicyRun) throws {
        try db.execute(sql: "DELETE FROM meta WHERE key = ?", arguments: [MinFreeCap.metaPrefix + root])
        if db.changesCount > 0 { run.recordedInBatch = true }
    }
}
