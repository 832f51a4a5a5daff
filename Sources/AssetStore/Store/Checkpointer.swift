// Checkpoints off the write path. SQLite's automatic checkpoint runs inside the commit that
// crossed 1,000 WAL frames, holding the write lock while it copies pages and syncs the
// database file, so every writer waited for it. Here the writer's WAL hook only notes the
// size and wakes a background queue, which runs a PASSIVE checkpoint on its own connection
// beside the writer. If writes outrun it and the WAL keeps growing, the committing writer
// checkpoints itself again, as SQLite would, so the WAL stays bounded.
//
// The WAL starts over from its beginning only when a write transaction begins with every
// frame copied, which a background checkpoint racing a stream of commits never achieves: the
// WAL would grow to the inline limit, and checkpoints would run after nearly every commit,
// each copying again the same few hot pages. So once a background run has copied all but a
// few frames, the writer copies those itself (a millisecond at most) and the next
// transaction restarts the WAL; a cycle copies each page once, however often it changed.
//
// On a disk with little free space the WAL must not grow to those thresholds (16 MiB before a
// background run, 64 MiB inline: on an 8 MiB disk it filled the disk by itself), so there the
// writer copies it back once it passes 1 MiB, and the WAL starts over instead of growing.

import Dispatch
import Glibc
import GRDB
import GRDBSQLite
import Synchronization

final class Checkpointer: Sendable {
    /// WAL frames (4 KiB pages) after a commit that start a background checkpoint.
    static let backgroundThreshold: Int32 = 4000
    /// Frames left after a background run that the writer copies itself, ending the cycle.
    static let finishThreshold: Int32 = 512
    /// WAL frames after a commit at which the writer checkpoints inline, as SQLite would.
    static let inlineThreshold: Int32 = 16000
    /// With free space low, WAL frames (1 MiB) at which the writer checkpoints inline: the
    /// next transaction then starts the WAL over instead of growing it into the last free
    /// blocks (on an 8 MiB filesystem the WAL alone filled the disk).
    static let lowSpaceThreshold: Int32 = 256
    /// Free bytes on the database's filesystem below which space is low: twice what the WAL
    /// may grow to otherwise.
    static let lowSpaceBytes = 2 * Int64(inlineThreshold) * 4096

    private let path: String
    /// The writer's VFS (nil: SQLite's default): the checkpointer writes the database and
    /// truncates the WAL as the writer's connection would.
    private let vfs: String?
    private let queue = DispatchQueue(label: "assetd.checkpoint")
    private let running = Atomic<Bool>(false)
    private let closed = Atomic<Bool>(false)
    /// Set while the writer runs its own checkpoint: a background one would make it busy.
    private let paused = Atomic<Int>(0)
    /// Checkpoints the queue has run (for tests).
    let completed = Atomic<Int>(0)
    /// Checkpoints the writer ran to end a cycle (for tests).
    let finished = Atomic<Int>(0)
    /// Frames of the current WAL the last background run copied (0: none since the restart).
    private let backfilled = Atomic<Int32>(0)
    /// The WAL's size in frames at the last commit: a smaller one means it started over.
    let lastFrames = Atomic<Int32>(0)
    /// The WAL's size when a background run last copied nothing new (a reader holds an older
    /// snapshot): no new run until it has grown by a threshold, instead of one per commit.
    private let stalledAt = Atomic<Int32>(0)
    /// Checkpoints that failed with an error (not busy: a busy one just runs later), and the
    /// last failure's message: the frames stay in the WAL, which grows until one succeeds.
    let failures = Atomic<Int>(0)
    private let lastFailure = Mutex<String?>(nil)
    /// The first failed sync of the WAL or the database file (the store's own, or a
    /// checkpoint's): the kernel may have dropped what it could not write, so a later sync
    /// that succeeds proves nothing, and a checkpoint could copy pages read back stale into
    /// the database file. From then on nothing is written or checkpointed; a restart
    /// recovers from what is on disk (recovery checks every frame).
    private let syncFailure = Mutex<String?>(nil)
    private let syncFailed = Atomic<Bool>(false)
    /// The checkpoint connection, opened on first use; only the queue touches it.
    private let connection = Mutex<UnsafeSendable<OpaquePointer>?>(nil)
    /// Free space on the database's filesystem is below `lowSpaceBytes` (read by the hook
    /// once per `lowSpaceThreshold` frames of growth, and every second by the daemon).
    let lowSpace = Atomic<Bool>(false)
    /// The WAL's size in frames when the hook last read the free space.
    private let spaceReadAt = Atomic<Int32>(0)
    /// Checkpoints the writer ran because space was low (for tests).
    let lowSpaceRuns = Atomic<Int>(0)

    init(path: String, vfs: String?) {
        self.path = path
        self.vfs = vfs
    }

    /// Replaces the writer's automatic checkpoint with this one.
    func install(on writer: OpaquePointer) {
        // passUnretained: the store keeps the checkpointer for as long as its writer lives.
        sqlite3_wal_hook(writer, checkpointHook, Unmanaged.passUnretained(self).toOpaque())
    }

    /// From the WAL hook, on the writer's thread, right after a commit.
    fileprivate func committed(frames: Int32, writer: OpaquePointer?, schema: UnsafePointer<CChar>?) -> Int32 {
        if syncFailed.load(ordering: .acquiring) { return SQLITE_OK }
        if frames < lastFrames.exchange(frames, ordering: .relaxed) {
            // Started over: what earlier runs copied belongs to the old WAL.
            backfilled.store(0, ordering: .relaxed)
            stalledAt.store(0, ordering: .relaxed)
            spaceReadAt.store(0, ordering: .relaxed)
        }
        if frames >= Checkpointer.lowSpaceThreshold, frames < Checkpointer.inlineThreshold, spaceIsLow(frames: frames) {
            // Copied now, by the writer, so that the next transaction starts the WAL over.
            let rc = sqlite3_wal_checkpoint_v2(writer, schema, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
            note(rc, writer, "checkpoint")
            lowSpaceRuns.add(1, ordering: .relaxed)
            return SQLITE_OK
        }
        if frames >= Checkpointer.inlineThreshold {
            // The background could not keep up: catch up now, inside the writer (PASSIVE waits
            // for no one). Its result is not returned: the commit has happened either way.
            let rc = sqlite3_wal_checkpoint_v2(writer, schema, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
            note(rc, writer, "checkpoint")
            return SQLITE_OK
        }
        let done = backfilled.load(ordering: .relaxed)
        let idle = !running.load(ordering: .acquiring)
        if done > 0, idle, frames - done <= Checkpointer.finishThreshold {
            // The last few frames, here: the WAL is then all copied, so the next write
            // transaction starts it over. A reader's older snapshot may keep some; no matter.
            backfilled.store(0, ordering: .relaxed)
            var log: Int32 = 0
            var copied: Int32 = 0
            let rc = sqlite3_wal_checkpoint_v2(writer, schema, SQLITE_CHECKPOINT_PASSIVE, &log, &copied)
            note(rc, writer, "checkpoint")
            // A reader's snapshot kept frames back: no background run until the WAL has grown
            // (else the next would record that same copy as progress, and this would repeat).
            if copied < log { stalledAt.store(log + Checkpointer.backgroundThreshold, ordering: .relaxed) }
            finished.add(1, ordering: .relaxed)
            return SQLITE_OK
        }
        if frames >= Checkpointer.backgroundThreshold, idle, frames - done > Checkpointer.finishThreshold,
            frames >= stalledAt.load(ordering: .relaxed), !closed.load(ordering: .acquiring),
            paused.load(ordering: .acquiring) == 0,
            running.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        {
            queue.async { [self] in
                run(before: done)
                running.store(false, ordering: .releasing)
            }
        }
        return SQLITE_OK
    }

    /// Whether free space is low, read again once the WAL has grown by `lowSpaceThreshold`
    /// frames since the last look (a statvfs per MiB of WAL, not per commit).
    private func spaceIsLow(frames: Int32) -> Bool {
        if frames >= spaceReadAt.load(ordering: .relaxed) + Checkpointer.lowSpaceThreshold {
            spaceReadAt.store(frames, ordering: .relaxed)
            var vfs = statvfs()
            if statvfs(path, &vfs) == 0 {
                let free = Int64(clamping: UInt64(vfs.f_bavail) &* UInt64(vfs.f_frsize))
                lowSpace.store(free < Checkpointer.lowSpaceBytes, ordering: .relaxed)
            }
        }
        return lowSpace.load(ordering: .relaxed)
    }

    private func run(before done: Int32) {
        // Checked again here: the hook may have queued this just before `exclusive` paused it.
        guard !closed.load(ordering: .acquiring), paused.load(ordering: .acquiring) == 0,
            !syncFailed.load(ordering: .acquiring)
        else { return }
        let handle: OpaquePointer? = connection.withLock { c in
            if let c { return c.value }
            var h: OpaquePointer?
            let opened = sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, vfs)
            guard opened == SQLITE_OK, let h else {
                note(opened, h, "open for checkpoint")
                if let h { sqlite3_close_v2(h) }
                return nil
            }
            // A fresh connection learns the database is in WAL mode only once it has read it;
            // one that could not read would never checkpoint, so it is not kept.
            sqlite3_busy_timeout(h, 1000)
            sqlite3_extended_result_codes(h, 1)  // a failed sync must be told from other I/O errors
            let read = sqlite3_exec(h, "PRAGMA schema_version", nil, nil, nil)
            guard read == SQLITE_OK else {
                note(read, h, "read for checkpoint")
                sqlite3_close_v2(h)
                return nil
            }
            c = UnsafeSendable(h)
            return h
        }
        // A failure (busy, I/O) leaves the frames for the next checkpoint; nothing is lost.
        // Retried once the WAL has grown by a threshold, not after every commit.
        guard let handle else {
            stalledAt.store(lastFrames.load(ordering: .relaxed) + Checkpointer.backgroundThreshold, ordering: .relaxed)
            return
        }
        var log: Int32 = 0
        var copied: Int32 = 0
        let rc = sqlite3_wal_checkpoint_v2(handle, "main", SQLITE_CHECKPOINT_PASSIVE, &log, &copied)
        note(rc, handle, "checkpoint")
        if rc == SQLITE_OK, copied > done {
            backfilled.store(copied, ordering: .relaxed)
        } else {
            stalledAt.store(log + Checkpointer.backgroundThreshold, ordering: .relaxed)
        }
        completed.add(1, ordering: .relaxed)
    }

    /// Counts a failed step: anything but success and busy (another checkpoint or a writer
    /// had the lock, so the next run copies the frames).
    private func note(_ rc: Int32, _ db: OpaquePointer?, _ step: String) {
        let primary = rc & 0xff
        guard primary != SQLITE_OK, primary != SQLITE_BUSY, primary != SQLITE_LOCKED else { return }
        let detail =
            db.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(rc))
        lastFailure.withLock { $0 = "\(step): \(detail) (SQLite code \(rc))" }
        failures.add(1, ordering: .releasing)
        if rc == ResultCode.SQLITE_IOERR_FSYNC.rawValue { recordSyncFailure("\(step): \(detail)") }
    }

    /// Records a failed sync (the first one's message is kept).
    func recordSyncFailure(_ message: String) {
        syncFailure.withLock { $0 = $0 ?? message }
        syncFailed.store(true, ordering: .releasing)
    }

    /// The first failed sync, if any (the store then refuses writes and checkpoints); one
    /// atomic load while there is none (every commit asks).
    var syncFailureMessage: String? { syncFailed.load(ordering: .acquiring) ? syncFailure.withLock { $0 } : nil }

    /// The last failure's message, if any checkpoint failed.
    var lastFailureMessage: String? { lastFailure.withLock { $0 } }

    /// Runs `body` (an explicit checkpoint, VACUUM) with no background checkpoint running or
    /// starting: SQLite answers a second checkpointer busy, so TRUNCATE would not truncate.
    func exclusive<T>(_ body: () throws -> T) rethrows -> T {
        paused.add(1, ordering: .acquiringAndReleasing)
        defer { paused.subtract(1, ordering: .acquiringAndReleasing) }
        drain()
        return try body()
    }

    /// Runs `body` on `handle` with no busy timeout, then sets it back to `milliseconds`: a
    /// write-back that must wait for no reader (Store+Reserve.swift).
    static func waitingForNoOne<T>(
        _ handle: OpaquePointer?, after milliseconds: Int32, _ body: () throws -> T
    ) rethrows -> T {
        sqlite3_busy_timeout(handle, 0)
        defer { sqlite3_busy_timeout(handle, milliseconds) }
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

private let checkpointHook:
    @convention(c) (UnsafeMutableRawPointer?, OpaquePointer?, UnsafePointer<CChar>?, Int32) -> Int32 = {
        context, writer, schema, frames in
        // Unmanaged: a borrow; the store outlives its writer connection.
        Unmanaged<Checkpointer>.fromOpaque(context!).takeUnretainedValue()  // context set by install
            .committed(frames: frames, writer: writer, schema: schema)
    }
