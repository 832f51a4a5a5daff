// A query connection's sorts, GROUP BY, DISTINCT and subqueries spill to temporary files once
// they outgrow memory (the sorter past the page cache's size, an ephemeral table past the
// temporary database's cache), under SQLITE_TMPDIR, TMPDIR, /var/tmp, /usr/tmp or /tmp: a
// client's query over a million rows could fill the disk the store and its files live on for
// as long as it runs.
// SQLite has no limit on those bytes (temp.max_page_count covers only the temp schema, not the
// sorter), so each query connection opens its database through a VFS of its own that wraps the
// default one and counts what its temporary files hold: the largest offset written to each,
// less what a truncate gives back, until the file is closed (the unix VFS unlinks temporary
// files at open, so closing frees their space). A write that would take the total past the
// limit fails with SQLITE_FULL, which ends the statement; the flag it sets tells the query
// that the limit, not the disk, was full. The files of the database itself (main database,
// WAL, journal) are the wrapped VFS's own, untouched, so locks and the wal-index are shared
// with every other connection as usual. A temporary file's methods are version 1: no memory
// map, whose pages would be written without a write.

#include "query_temp.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct AssetdQueryTempVFS {
    sqlite3_vfs base;            // must come first: SQLite hands this back as sqlite3_vfs *
    sqlite3_vfs *real;
    long long limit;
    _Atomic long long bytes;     // what the open temporary files hold
    _Atomic long long peak;
    _Atomic int refused;
    char name[64];
};

typedef struct TempFile {
    sqlite3_file base;           // methods: tempMethods
    sqlite3_file *real;          // the wrapped VFS's file, in the same allocation, after this
    AssetdQueryTempVFS *vfs;
    long long size;              // bytes counted for this file
    long long pad;               // keeps `real` 8-byte aligned whatever the pointers' size
} TempFile;

static const sqlite3_io_methods tempMethods;

static sqlite3_file *realFile(sqlite3_file *f) { return ((TempFile *)f)->real; }

/// Counts the file `t` as `size` bytes, if that keeps the VFS within its limit.
static int resize(TempFile *t, long long size) {
    long long grow = size - t->size;
    if (grow <= 0) return SQLITE_OK;
    long long total = atomic_fetch_add(&t->vfs->bytes, grow) + grow;
    if (total > t->vfs->limit) {
        atomic_fetch_sub(&t->vfs->bytes, grow);
        atomic_store(&t->vfs->refused, 1);
        return SQLITE_FULL;
    }
    long long peak = atomic_load(&t->vfs->peak);
    while (total > peak && !atomic_compare_exchange_weak(&t->vfs->peak, &peak, total)) {}
    t->size = size;
    return SQLITE_OK;
}

static void release(TempFile *t, long long size) {
    if (size >= t->size) return;
    atomic_fetch_sub(&t->vfs->bytes, t->size - size);
    t->size = size;
}

static int tClose(sqlite3_file *f) {
    TempFile *t = (TempFile *)f;
    int rc = t->real->pMethods->xClose(t->real);
    release(t, 0);
    return rc;
}

static int tRead(sqlite3_file *f, void *buf, int amount, sqlite3_int64 offset) {
    return realFile(f)->pMethods->xRead(realFile(f), buf, amount, offset);
}

static int tWrite(sqlite3_file *f, const void *buf, int amount, sqlite3_int64 offset) {
    TempFile *t = (TempFile *)f;
    long long before = t->size;
    int rc = resize(t, offset + amount);
    if (rc != SQLITE_OK) return rc;
    rc = t->real->pMethods->xWrite(t->real, buf, amount, offset);
    if (rc != SQLITE_OK) release(t, before);
    return rc;
}

static int tTruncate(sqlite3_file *f, sqlite3_int64 size) {
    TempFile *t = (TempFile *)f;
    // ftruncate can lengthen a file too (sparse, but counted as the writes would be).
    int rc = resize(t, size);
    if (rc != SQLITE_OK) return rc;
    rc = t->real->pMethods->xTruncate(t->real, size);
    if (rc == SQLITE_OK) release(t, size);
    return rc;
}

static int tSync(sqlite3_file *f, int flags) { return realFile(f)->pMethods->xSync(realFile(f), flags); }

static int tFileSize(sqlite3_file *f, sqlite3_int64 *size) {
    return realFile(f)->pMethods->xFileSize(realFile(f), size);
}

static int tLock(sqlite3_file *f, int level) { return realFile(f)->pMethods->xLock(realFile(f), level); }

static int tUnlock(sqlite3_file *f, int level) { return realFile(f)->pMethods->xUnlock(realFile(f), level); }

static int tCheckReservedLock(sqlite3_file *f, int *out) {
    return realFile(f)->pMethods->xCheckReservedLock(realFile(f), out);
}

static int tFileControl(sqlite3_file *f, int op, void *arg) {
    // A size hint or chunk size would let the unix VFS lengthen the file without a write: a
    // hint is only a hint, and the file grows by its writes alone.
    if (op == SQLITE_FCNTL_SIZE_HINT || op == SQLITE_FCNTL_CHUNK_SIZE) return SQLITE_OK;
    return realFile(f)->pMethods->xFileControl(realFile(f), op, arg);
}

static int tSectorSize(sqlite3_file *f) { return realFile(f)->pMethods->xSectorSize(realFile(f)); }

static int tDeviceCharacteristics(sqlite3_file *f) {
    return realFile(f)->pMethods->xDeviceCharacteristics(realFile(f));
}

static const sqlite3_io_methods tempMethods = {
    .iVersion = 1,
    .xClose = tClose, .xRead = tRead, .xWrite = tWrite, .xTruncate = tTruncate, .xSync = tSync,
    .xFileSize = tFileSize, .xLock = tLock, .xUnlock = tUnlock, .xCheckReservedLock = tCheckReservedLock,
    .xFileControl = tFileControl, .xSectorSize = tSectorSize, .xDeviceCharacteristics = tDeviceCharacteristics,
};

static sqlite3_vfs *realVFS(sqlite3_vfs *v) { return ((AssetdQueryTempVFS *)v)->real; }

static int vOpen(sqlite3_vfs *v, const char *name, sqlite3_file *f, int flags, int *outFlags) {
    sqlite3_vfs *real = realVFS(v);
    // The database's own files: the wrapped VFS's file, in place (our szOsFile is larger).
    if (flags & (SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_MAIN_JOURNAL | SQLITE_OPEN_WAL | SQLITE_OPEN_SUPER_JOURNAL)) {
        return real->xOpen(real, name, f, flags, outFlags);
    }
    TempFile *t = (TempFile *)f;
    memset(t, 0, sizeof *t);
    t->real = (sqlite3_file *)(t + 1);
    t->vfs = (AssetdQueryTempVFS *)v;
    int rc = real->xOpen(real, name, t->real, flags, outFlags);
    // SQLite calls xClose only if pMethods is set; the real file's open failed or succeeded whole.
    t->base.pMethods = t->real->pMethods != NULL ? &tempMethods : NULL;
    return rc;
}

static int vDelete(sqlite3_vfs *v, const char *name, int syncDir) {
    return realVFS(v)->xDelete(realVFS(v), name, syncDir);
}

static int vAccess(sqlite3_vfs *v, const char *name, int flags, int *out) {
    return realVFS(v)->xAccess(realVFS(v), name, flags, out);
}

static int vFullPathname(sqlite3_vfs *v, const char *name, int size, char *out) {
    return realVFS(v)->xFullPathname(realVFS(v), name, size, out);
}

static void *vDlOpen(sqlite3_vfs *v, const char *name) { return realVFS(v)->xDlOpen(realVFS(v), name); }

static void vDlError(sqlite3_vfs *v, int size, char *out) { realVFS(v)->xDlError(realVFS(v), size, out); }

static void (*vDlSym(sqlite3_vfs *v, void *handle, const char *symbol))(void) {
    return realVFS(v)->xDlSym(realVFS(v), handle, symbol);
}

static void vDlClose(sqlite3_vfs *v, void *handle) { realVFS(v)->xDlClose(realVFS(v), handle); }

static int vRandomness(sqlite3_vfs *v, int size, char *out) {
    return realVFS(v)->xRandomness(realVFS(v), size, out);
}

static int vSleep(sqlite3_vfs *v, int micros) { return realVFS(v)->xSleep(realVFS(v), micros); }

static int vCurrentTime(sqlite3_vfs *v, double *out) { return realVFS(v)->xCurrentTime(realVFS(v), out); }

static int vGetLastError(sqlite3_vfs *v, int size, char *out) {
    return realVFS(v)->xGetLastError(realVFS(v), size, out);
}

static int vCurrentTimeInt64(sqlite3_vfs *v, sqlite3_int64 *out) {
    return realVFS(v)->xCurrentTimeInt64(realVFS(v), out);
}

static int vSetSystemCall(sqlite3_vfs *v, const char *name, sqlite3_syscall_ptr call) {
    return realVFS(v)->xSetSystemCall(realVFS(v), name, call);
}

static sqlite3_syscall_ptr vGetSystemCall(sqlite3_vfs *v, const char *name) {
    return realVFS(v)->xGetSystemCall(realVFS(v), name);
}

static const char *vNextSystemCall(sqlite3_vfs *v, const char *name) {
    return realVFS(v)->xNextSystemCall(realVFS(v), name);
}

AssetdQueryTempVFS *assetd_query_temp_create(long long limit) {
    sqlite3_vfs *real = sqlite3_vfs_find(NULL);
    if (real == NULL || real->iVersion < 3) return NULL;
    AssetdQueryTempVFS *v = calloc(1, sizeof *v);
    if (v == NULL) return NULL;
    v->real = real;
    v->limit = limit;
    snprintf(v->name, sizeof v->name, "assetd-query-temp-%p", (void *)v);
    v->base = (sqlite3_vfs){
        .iVersion = 3,
        .szOsFile = (int)sizeof(TempFile) + real->szOsFile,
        .mxPathname = real->mxPathname,
        .zName = v->name,
        .xOpen = vOpen, .xDelete = vDelete, .xAccess = vAccess, .xFullPathname = vFullPathname,
        .xDlOpen = vDlOpen, .xDlError = vDlError, .xDlSym = vDlSym, .xDlClose = vDlClose,
        .xRandomness = vRandomness, .xSleep = vSleep, .xCurrentTime = vCurrentTime, .xGetLastError = vGetLastError,
        .xCurrentTimeInt64 = vCurrentTimeInt64,
        .xSetSystemCall = vSetSystemCall, .xGetSystemCall = vGetSystemCall, .xNextSystemCall = vNextSystemCall,
    };
    if (sqlite3_vfs_register(&v->base, 0) != SQLITE_OK) {
        free(v);
        return NULL;
    }
    return v;
}

const char *assetd_query_temp_name(const AssetdQueryTempVFS *v) { return v->name; }

void assetd_query_temp_destroy(AssetdQueryTempVFS *v) {
    if (v == NULL) return;
    sqlite3_vfs_unregister(&v->base);
    free(v);
}

int assetd_query_temp_take_refused(AssetdQueryTempVFS *v) { return atomic_exchange(&v->refused, 0); }

long long assetd_query_temp_bytes(const AssetdQueryTempVFS *v) {
    return atomic_load(&((AssetdQueryTempVFS *)v)->bytes);
}

long long assetd_query_temp_take_peak(AssetdQueryTempVFS *v) {
    return atomic_exchange(&v->peak, atomic_load(&v->bytes));
}
