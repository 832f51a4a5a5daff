// A SQLite VFS per query connection that bounds the bytes of the temporary files the
// connection writes (see query_temp.c).
#ifndef QUERY_TEMP_H
#define QUERY_TEMP_H

#include <sqlite3.h>

typedef struct AssetdQueryTempVFS AssetdQueryTempVFS;

/// Registers a new VFS wrapping the default one, under a name of its own, whose temporary
/// files (sorter runs, spilled ephemeral tables, temporary databases and journals) hold at most
/// `limit` bytes together; a write past that fails with SQLITE_FULL. NULL if out of memory or
/// the registration failed.
AssetdQueryTempVFS *assetd_query_temp_create(long long limit);

/// The name to open the connection with (sqlite3_open_v2's last argument).
const char *assetd_query_temp_name(const AssetdQueryTempVFS *vfs);

/// Unregisters and frees `vfs`; only once the connection opened with it is closed.
void assetd_query_temp_destroy(AssetdQueryTempVFS *vfs);

/// Whether a write was refused for the limit since the last call, which clears it.
int assetd_query_temp_take_refused(AssetdQueryTempVFS *vfs);

/// The bytes the VFS's temporary files hold now, and the most they held since the last call
/// (which starts the count again from now).
long long assetd_query_temp_bytes(const AssetdQueryTempVFS *vfs);
long long assetd_query_temp_take_peak(AssetdQueryTempVFS *vfs);
#endif
