// The guard on the files SQLite's unix VFS opens beside a database (see side_files.c).
#ifndef SIDE_FILES_H
#define SIDE_FILES_H

/// 1 once the guard is in place on the unix VFS (before main, so before any database of the
/// process opens); 0 if SQLite refused it, when no database may be opened as root.
int assetd_side_files_guarded(void);

#endif
