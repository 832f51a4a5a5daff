// The guard on the files SQLite's unix VFS opens beside a database (see side_files.c).
#ifndef SIDE_FILES_H
#define SIDE_FILES_H

/// 1 once the guard is in place on the unix VFS (before main, so before any database of the
/// process opens); 0 if SQLite refused it, when no database may be opened as root.
int assetd_side_files_guarded(void);

/// 1 with the device and inode of the last `-wal` named `path` (as SQLite names it: the
/// database's full name, symlinks resolved) that SQLite opened through the guard; 0 if none.
int assetd_side_files_wal_seen(const char *path, unsigned long long *dev, unsigned long long *ino);

#endif
