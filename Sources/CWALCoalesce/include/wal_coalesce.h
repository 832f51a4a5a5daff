// A SQLite VFS that wraps the default one and gathers each transaction's WAL frame writes
// into one write (see wal_coalesce.c).
#ifndef WAL_COALESCE_H
#define WAL_COALESCE_H

#include <sqlite3.h>

/// The name this VFS is registered under. It is not the default VFS: only connections opened
/// with this name (the store's writer) use it; any other connection of the process gets
/// SQLite's default, the VFS this one wraps.
#define ASSETD_WAL_COALESCE_VFS "assetd-coalesce"

/// The SQLite versions (sqlite3_libversion_number()) this VFS was tested with, the first
/// included, the second not. It relies on how wal.c writes frames (a frame header, then its
/// page; walRewriteChecksums; the split at a sync point and the padding of synchronous FULL;
/// the commit frame's page written last, before the wal-index publishes it), on WAL_WRITE_LOCK
/// being wal-index lock 0, and on the unix VFS writing at most 17 bits of length at a time:
/// none of that is an interface. Widen the range only after WALCoalesceTests pass on the new
/// version and its wal.c write path has been read.
#define ASSETD_WAL_COALESCE_TESTED_FROM 3040000
#define ASSETD_WAL_COALESCE_TESTED_BELOW 3041000

/// Registers the VFS ASSETD_WAL_COALESCE_VFS, wrapping the default VFS found at the first call
/// (not making itself the default). Idempotent and thread-safe; returns a SQLite result code.
int assetd_wal_coalesce_register(void);

// Test hooks, defined in debug builds only (SwiftPM defines DEBUG=1 for C targets there): a
// release build has no way to inject faults, and a call to one does not link. Declared in
// every build, since Swift's importer does not see DEBUG; only tests call them.
/// Writes this VFS has issued for one WAL file (from SQLITE_FCNTL_JOURNAL_POINTER); -1 if the
/// file is not one of its WAL files.
long long assetd_wal_coalesce_writes(sqlite3_file *wal);

/// `hook` is called with a connection's database file (SQLITE_FCNTL_FILE_POINTER) on its thread
/// just before it releases the WAL write lock, a commit published but COMMIT not yet returned.
void assetd_wal_coalesce_set_write_unlock_hook(void (*hook)(sqlite3_file *database));

/// The next `count` syncs (xSync) of database or WAL files whose path starts with `prefix`
/// fail with SQLITE_IOERR_FSYNC, as an fdatasync returning EIO would (NULL or 0: none).
void assetd_wal_coalesce_fail_syncs(const char *prefix, int count);
#endif
