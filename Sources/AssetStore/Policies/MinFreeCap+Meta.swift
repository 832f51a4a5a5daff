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

    /// The cap `value` (a `metaValue`) records for `root` on `device`, if it is one of
    /// `minFree`.
    static func recorded(_ value: String?, minFree: Int64, device: Int64, root: String) -> MinFreeCap? {
        let numbers = (value ?? "").split(separator: " ").compactMap { Int64($0) }
        guard numbers.count == 3, numbers[0] == minFree else { return nil }
        return MinFreeCap(
            device: device, root: root, minFree: minFree, cap: numbers[1], share: numbers[2],
            reachable: numbers[1].adding(saturating: numbers[2]), engagedRoom: numbers[1], engagedShare: numbers[2])
    }
}

extension Store {
    /// Loads the caps recorded for the roots at open. Those recorded for another `min_free` than
    /// the configured one, or for a root no longer configured, are deleted; with none
    /// configured (a tool's open), nothing is loaded. Skipped on a full disk: runs then load
    /// the caps of their roots (`minFreeCap(root:device:minFree:_:)`).
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
            let value: String? = row["value"]
            var st = stat()
            guard roots.paths.contains(root),
                var cap = MinFreeCap.recorded(value, minFree: minFree, device: 0, root: root)
            else {
                try db.execute(sql: "DELETE FROM meta WHERE key = ?", arguments: [key])
                continue
            }
            guard stat(root, &st) == 0 else { continue }  // a run loads it once the root is back
            cap.device = Int64(bitPattern: UInt64(st.st_dev))
            caps[root] = cap
        }
        state.withLock { $0.minFreeCaps = caps }
    }

    /// The cap in effect for `root`: the one in memory, else the one recorded for `minFree`
    /// (not loaded at open: its root was missing, or the disk full; or `min_free` came back to
    /// this floor by a reload, and a restart would load it), kept in memory from then on.
    func minFreeCap(root: String, device: Int64, minFree: Int64, _ db: Database) throws -> MinFreeCap? {
        if let cap = minFreeCap(root: root) { return cap.minFree == minFree ? cap : nil }
        let value = try String.fetchOne(
            db, sql: "SELECT CAST(value AS TEXT) FROM meta WHERE key = ?", arguments: [MinFreeCap.metaPrefix + root])
        guard let cap = MinFreeCap.recorded(value, minFree: minFree, device: device, root: root) else { return nil }
        return state.withLock {
            guard $0.policy?.minFree == minFree else { return nil }
            $0.minFreeCaps[root] = cap
            return cap
        }
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
