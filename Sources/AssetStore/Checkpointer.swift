// Checkpoints off the write path. SQLite's automatic checkpoint runs inside the commit that
// crossed 1,000 WAL frames, holding the write lock while it copies pages and syncs the
// database file, so every writer waited for it. Here the writer's WAL hook only notes the
// size and wakes a background queue, which runs a PASSIVE checkpoint on its own connection
// beside the writer. If writes outrun it and the WAL keeps growing, the committing writer
// checkpoints itself again, as SQLite would, so the WAL stays bounded.

import Dispatch
import GRDBSQLite
import Synchronization

final class Checkpointer: Sendable {
    /// WAL frames after a commit that start a background checkpoint (SQLite's default).
    static let backgroundThreshold: Int32 = 1000
    /// WAL frames after a commit at which the writer checkpoints inline, as SQLite would.
    static let inlineThreshold: Int32 = 16000

    private let path: String
    private let queue = DispatchQueue(label: "assetd.checkpoint")
    private let running = Atomic<Bool>(false)
    private let closed = Atomic<Bool>(false)
    /// Set while the writer runs its own checkpoint: a background one would make it busy.
    private let paused = Atomic<Int>(0)
    /// Checkpoints the queue has run (for tests).
    let completed = Atomic<Int>(0)
    /// The checkpoint connection, opened on first use; only the queue touches it.
    private let connection = Mutex<UnsafeSendable<OpaquePointer>?>(nil)

    init(path: String) {
        self.path = path
    }

    /// Replaces the writer's automatic checkpoint with this one.
    func install(on writer: OpaquePointer) {
        // passUnretained: the store keeps the checkpointer for as long as its writer lives.
        sqlite3_wal_hook(writer, checkpointHook, Unmanaged.passUnretained(self).toOpaque())
    }

    /// From the WAL hook, on the writer's thread, right after a commit.
    fileprivate func committed(frames: Int32, writer: OpaquePointer?, schema: UnsafePointer<CChar>?) -> Int32 {
        if frames >= Checkpointer.inlineThreshold {
            // The background could not keep up: catch up now, inside the writer (PASSIVE waits
            // for no one). Its result is not returned: the commit has happened either way.
            _ = sqlite3_wal_checkpoint_v2(writer, schema, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
            return SQLITE_OK
        }
        if frames >= Checkpointer.backgroundThreshold, !closed.load(ordering: .acquiring),
            paused.load(ordering: .acquiring) == 0,
            running.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        {
            queue.async { [self] in
                run()
                running.store(false, ordering: .releasing)
            }
        }
        return SQLITE_OK
    }

    private func run() {
        // Checked again here: the hook may have queued this just before `exclusive` paused it.
        guard !closed.load(ordering: .acquiring), paused.load(ordering: .acquiring) == 0 else { return }
        let handle: OpaquePointer? = connection.withLock { c in
            if let c { return c.value }
            var h: OpaquePointer?
            guard sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK, let h else {
                if let h { sqlite3_close_v2(h) }
                return nil
            }
            // A fresh connection learns the database is in WAL mode only once it has read it;
            // one that could not read would never checkpoint, so it is not kept.
            sqlite3_busy_timeout(h, 1000)
            guard sqlite3_exec(h, "PRAGMA schema_version", nil, nil, nil) == SQLITE_OK else {
                sqlite3_close_v2(h)
                return nil
            }
            c = UnsafeSendable(h)
            return h
        }
        // A failure (busy, I/O) leaves the frames for the next checkpoint; nothing is lost.
        guard let handle else { return }
        _ = sqlite3_wal_checkpoint_v2(handle, "main", SQLITE_CHECKPOINT_PASSIVE, nil, nil)
        completed.add(1, ordering: .relaxed)
    }

    /// Runs `body` (an explicit checkpoint, VACUUM) with no background checkpoint running or
    /// starting: SQLite answers a second checkpointer busy, so TRUNCATE would not truncate.
    func exclusive<T>(_ body: () throws -> T) rethrows -> T {
        paused.add(1, ordering: .acquiringAndReleasing)
        defer { paused.subtract(1, ordering: .acquiringAndReleasing) }
        drain()
        return try body()
    }

    /// Waits for a running checkpoint (tests; close).
    func drain() {
        queue.sync {}
    }

    /// Stops checkpointing and closes the connection once the running checkpoint is done.
    func close() {
        closed.store(true, ordering: .releasing)
        queue.sync {
            connection.withLock { c in
                if let h = c?.value { sqlite3_close_v2(h) }
                c = nil
            }
        }
    }
}

private let checkpointHook: @convention(c) (UnsafeMutableRawPointer?, OpaquePointer?, UnsafePointer<CChar>?, Int32) -> Int32 = {
    context, writer, schema, frames in
    // Unmanaged: a borrow; the store outlives its writer connection.
    Unmanaged<Checkpointer>.fromOpaque(context!).takeUnretainedValue()  // context set by install
        .committed(frames: frames, writer: writer, schema: schema)
}
