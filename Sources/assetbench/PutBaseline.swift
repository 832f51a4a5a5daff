// `assetbench put-baseline DB COUNT GROUP [ENGINE_RATE [PER_COMMIT]]`: the durable socket
// put's work done the best straightforward way, for information beside the Redis line: on a
// database the engine made and filled (`assetbench populate`, the same schema and objects as
// the daemon's), opened on SQLite's C API with its own `unix` VFS and the store baseline's
// pragmas (Baseline.swift: WAL, `synchronous = FULL`, a 1 GiB map), COUNT new objects like
// the socket's (its row, whose columns are the built-in index's; 100 owners in turn) in
// commits of GROUP, on one thread. SQLite syncs the WAL at each COMMIT, so GROUP is the
// daemon's puts per sync of its WAL in the same run (its syncer's one fdatasync covers every
// commit before it: a commit a sync here would sync more often than the daemon did), and its
// automatic checkpoints run inline (the daemon's checkpointer holds the write lock too). With
// ENGINE_RATE (the daemon's durable puts/s in the same run) prints the daemon against it, and
// PER_COMMIT, the daemon's puts a commit, beside the group. A GROUP under 1 (no durable put
// completed) prints the line as n/a.

import Foundation
import Glibc
import GRDBSQLite

extension SocketCommands {
    static func putBaseline(_ args: [String]) throws {
        guard (3...5).contains(args.count), let count = Int(args[1]), let batch = Double(args[2]), count > 0 else {
            throw BenchError("usage: assetbench put-baseline DB COUNT GROUP [ENGINE_RATE [PER_COMMIT]]")
        }
        let perCommit = args.count == 5 ? Double(args[4]).map { String(format: "%.1f", $0) } ?? "?" : "?"
        let name = "  socket-put-c-baseline (info, one run after the rounds)"
        guard batch >= 1 else {
            print("\(name): n/a, no durable put completed in the socket run")
            fflush(nil)
            return
        }
        var h: OpaquePointer?
        let rc = sqlite3_open_v2(args[0], &h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, "unix")
        guard rc == SQLITE_OK, let db = h else { throw BenchError("cannot open \(args[0]) (\(rc))") }
        defer { sqlite3_close_v2(db) }
        for sql in BaselineStore.pragmas {
            guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else {
                throw BenchError("\(String(cString: sqlite3_errmsg(db))): \(sql)")
            }
        }
        let seconds: Double
        do {
            // Scoped: the statements are finalized before the connection closes.
            let begin = CStatement(db, "BEGIN IMMEDIATE")
            let commit = CStatement(db, "COMMIT")
            let nextCommit = CStatement(db, "UPDATE meta SET value = value + 1 WHERE key = 'commit' RETURNING value")
            let insert = CStatement(
                db,
                """
                INSERT INTO object (collection, key, value, metadata, owner, created, modified, accessed, size, files)
                VALUES (?, ?, ?, NULL, ?, ?, ?, ?, 0, 0)
                """)
            // The same keys and values as the socket's puts, made before the clock starts.
            let puts = (0..<count).map { i -> (key: String, value: String, owner: String) in
                let owner = Bench.owners[i % 100]
                return ("b" + pad(i, 8), "{\"owner\":\"\(owner)\",\"n\":\(i)}", owner)
            }
            // A fractional batch (the daemon's mean) alternates the two sizes around it.
            var done = 0
            var commits = 0
            let start = monotonicNanos()
            while done < count {
                let size = min(
                    count - done,
                    Int((Double(commits + 1) * batch).rounded()) - Int((Double(commits) * batch).rounded()))
                begin.run()
                precondition(nextCommit.step(), "meta has its commit row")
                nextCommit.run()
                let now = wallClock()
                for p in puts[done..<(done + max(1, size))] {
                    insert.bind(1, collection)
                    insert.bind(2, p.key)
                    insert.bind(3, p.value)
                    insert.bind(4, p.owner)
                    insert.bind(5, now)
                    insert.bind(6, now)
                    insert.bind(7, now)
                    insert.run()
                }
                commit.run()
                done += max(1, size)
                commits += 1
            }
            seconds = Double(monotonicNanos() - start) / 1e9
        }
        let rate = Double(count) / seconds
        var line =
            "\(name): \(count) puts of the same objects on SQLite's C API, one thread, \(String(format: "%.1f", batch))"
            + " a commit, each synced (the daemon's puts per WAL sync in this run; its puts a commit \(perCommit)),"
            + " synchronous = FULL: \(Int(rate))/s (\(String(format: "%.1f", seconds * 1e6 / Double(count))) us per put)"
        if args.count >= 4, let engine = Double(args[3]), engine > 0 {
            line += "; durable socket put \(Int(engine))/s, ratio=\(String(format: "%.2f", engine / rate))"
        }
        print(line)
        fflush(nil)
    }
}

extension SocketCommands {
    /// The daemon's syncs of its WAL so far (`stats`, wal.syncs).
    static func walSyncs(_ socket: String) throws -> Int {
        let reply = try LineConnection(path: socket).call(RPC.line("stats", "{}"))
        guard let top = try JSONSerialization.jsonObject(with: Data(reply)) as? [String: Any],
            let result = top["result"] as? [String: Any], let wal = result["wal"] as? [String: Any],
            let syncs = wal["syncs"] as? Int
        else { throw BenchError("stats has no wal.syncs: \(RPC.text(reply))") }
        return syncs
    }
}
