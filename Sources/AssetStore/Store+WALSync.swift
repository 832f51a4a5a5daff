// The store's own fdatasync of the WAL, which makes commits durable with durability "full".
//
// Linux reports a writeback error once to each open descriptor of the file, and to a
// descriptor opened afterwards only if no one has been told yet. A sync through a descriptor
// opened for it could therefore succeed right after another sync (SQLite's own, of the WAL
// in a checkpoint, or a concurrent one of ours) had been told its pages were lost, and
// acknowledge commits that are not on disk (PostgreSQL's "fsyncgate"). So the descriptor is
// opened once, with the store, and kept: it sees every error from then on. Syncs through it
// take turns, and each checks for a recorded failure first: one descriptor hears of an error
// once, so a sync that ran after the failed one on the same descriptor would succeed too.

import Glibc
import Synchronization

/// The WAL opened for syncing, and which file it is (a WAL deleted and created again is
/// another file: syncing the old one would prove nothing).
final class WALDescriptor: Sendable {
    let fd: Int32
    let device: UInt64
    let inode: UInt64

    init(fd: Int32, device: UInt64, inode: UInt64) {
        self.fd = fd
        self.device = device
        self.inode = inode
    }

    deinit { Glibc.close(fd) }
}

extension Store {
    /// Opens the WAL's descriptor now, before any sync or checkpoint runs, so that it sees
    /// every writeback error from the start. Best effort: a sync opens it if this could not.
    func openWALDescriptor() {
        walSync.withLock { held in _ = try? Store.descriptor(for: path + "-wal", held: &held) }
    }

    /// fdatasync of the WAL: every frame written so far is on disk.
    func syncWAL() throws(StoreError) {
        let file = path + "-wal"
        // The commit is visible but may not be on disk: the caller must not acknowledge it, nor
        // run it again. That holds as much when the WAL cannot be opened (EMFILE) as when
        // fdatasync fails.
        func unsynced(_ call: String, _ e: Int32) -> StoreError {
            StoreError(
                .internalError, "the commit could not be synced to disk (\(call) \(file): \(errnoDescription(e)))",
                detail: .object(["unsynced": true]))
        }
        try walSync.withLock { (held: inout WALDescriptor?) throws(StoreError) in
            if let failure = syncFailure {
                throw StoreError(
                    .internalError, "the commit could not be synced to disk (an earlier sync failed: \(failure))",
                    detail: .object(["unsynced": true]))
            }
            let wal: WALDescriptor
            do throws(DescriptorError) {
                wal = try Store.descriptor(for: file, held: &held)
            } catch {
                throw unsynced(error.call, error.code)  // nothing was lost: later syncs may succeed
            }
            var ok = fdatasync(wal.fd) == 0
            var e = errno
            let injected = injectedSyncError.exchange(0, ordering: .relaxed)
            if injected != 0 { (ok, e) = (false, injected) }
            #if DEBUG
            if let trigger = Store.syncFailpoint, unlink(trigger) == 0 { (ok, e) = (false, EIO) }
            #endif
            state.withLock { $0.walSynced }?()
            guard ok else {
                checkpointer.recordSyncFailure("fdatasync \(file): \(errnoDescription(e))")
                throw unsynced("fdatasync", e)
            }
            walSyncs.add(1, ordering: .relaxed)
        }
    }

    struct DescriptorError: Error {
        let call: String
        let code: Int32
    }

    /// `held` if it is still the file at `file`, else that file opened anew.
    static func descriptor(for file: String, held: inout WALDescriptor?) throws(DescriptorError) -> WALDescriptor {
        var st = stat()
        guard stat(file, &st) == 0 else { throw DescriptorError(call: "stat", code: errno) }
        if let h = held, h.device == UInt64(st.st_dev), h.inode == UInt64(st.st_ino) { return h }
        held = nil
        let fd = open(file, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw DescriptorError(call: "open", code: errno) }
        var opened = stat()
        guard fstat(fd, &opened) == 0 else {
            let e = errno
            Glibc.close(fd)
            throw DescriptorError(call: "fstat", code: e)
        }
        let wal = WALDescriptor(fd: fd, device: UInt64(opened.st_dev), inode: UInt64(opened.st_ino))
        held = wal
        return wal
    }
}
