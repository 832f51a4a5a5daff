// A bound on the heap memory SQLite allocates for one client's query (see query_memory.c).
#ifndef QUERY_MEMORY_H
#define QUERY_MEMORY_H

typedef struct AssetdQueryMemory AssetdQueryMemory;

/// Whether SQLite initialized itself with the counting allocator (false before it initializes).
int assetd_query_memory_installed(void);

/// A new account whose queries may hold at most `limit` bytes; NULL if out of memory.
AssetdQueryMemory *assetd_query_memory_create(long long limit);

/// Gives `account` back for reuse; blocks still charged to it are no longer counted.
void assetd_query_memory_destroy(AssetdQueryMemory *account);

/// Starts a query on `account`: its count starts from zero, and what SQLite allocates on the
/// calling thread until `assetd_query_memory_leave` is charged to it. Returns the previous
/// account of the thread, to give to `leave`.
AssetdQueryMemory *assetd_query_memory_begin(AssetdQueryMemory *account);

/// Charges the calling thread's allocations to `account` again (NULL: to none), without
/// starting the count again.
AssetdQueryMemory *assetd_query_memory_enter(AssetdQueryMemory *account);

/// Whether an allocation was refused for the limit since the last call, which clears it.
int assetd_query_memory_take_refused(AssetdQueryMemory *account);

/// The bytes the running or last query holds, and the most it held.
long long assetd_query_memory_bytes(const AssetdQueryMemory *account);
long long assetd_query_memory_peak(const AssetdQueryMemory *account);
#endif
