// SQLite writes each WAL frame with two pwrite calls (a 24-byte header, then the page, which
// straddles two file pages since frames are 4,120 bytes), so a commit of 66 frames cost 132
// system calls and about 200 page-cache updates: half of an object.put batch's time under the
// write lock. This VFS wraps the default one; for WAL files only, it gathers contiguous
// writes in a buffer and writes them at once when the commit frame's page has been written
// (before SQLite publishes the commit in the wal-index, so other connections never read a
// frame that is not in the file yet). Everything else a WAL file is asked to do (read, sync,
// size, truncate, close, file controls) writes the buffer first, so the file looks to SQLite
// exactly as if every write had gone through at once. A crash loses only what the kernel
// would not have had either: durability still comes from the fdatasync after the commit.
// Only what SQLite writes when appending frames is gathered (the WAL header, a frame's header,
// the page right after it); anything else (a page rewritten in place, a header rewritten with
// new checksums after reading its frame, the pieces of a write split at a sync point, the
// first write after a sync) writes the buffer and then itself at once, so no commit ever ends
// with part of it held back. And a connection's buffer is written before it gives up the WAL
// write lock (the database file's xShmLock, which this VFS wraps for that alone, and its
// xUnlock, for exclusive locking mode): frames of a transaction that spilled and then rolled
// back must not reach the file after another connection has appended at their offsets.
// Other files are the wrapped VFS's own, untouched; a main database file's methods are the
// wrapped file's, but for those two.
// Registered under its own name, not as the default: a connection that does not ask for it
// (a reader, another program) has the wrapped VFS, and the same files, locks and wal-index
// through it, which is all that connections to one database must agree on.

#include "wal_coalesce.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

enum {
    walHeaderSize = 32,        // WAL_HDRSIZE
    frameHeaderSize = 24,      // WAL_FRAME_HDRSIZE
    walWriteLock = 0,          // WAL_WRITE_LOCK, the wal-index lock a writer holds
    bufferCapacity = 1 << 20,  // a bigger transaction is written a MiB at a time
    // The unix VFS keeps only the low 17 bits of a write's length (seekAndWriteFd: SQLite
    // itself never writes more than a page), so a buffer goes down in pieces below 128 KiB.
    writeLimit = 31 * 4096,
};

typedef struct DatabaseFile DatabaseFile;

/// What both wrappers start with, so that one set of pass-through methods serves both.
typedef struct Wrapper {
    sqlite3_file base;        // this VFS's methods
    sqlite3_file *real;       // the wrapped VFS's file, in the same allocation, after this
    const char *name;         // the path SQLite opened it by (valid until xClose)
} Wrapper;

typedef struct CoalescedFile {
    sqlite3_file base;        // methods: coalescedMethods
    sqlite3_file *real;       // as in Wrapper
    const char *name;         // as in Wrapper
    DatabaseFile *database;   // the connection's database file, if this VFS opened it
    unsigned char *buffer;    // allocated on the first write (readers never write the WAL)
    sqlite3_int64 start;      // file offset of buffer[0]
    int length;
    int commitPending;        // the last header buffered was a commit frame's
    int afterHeader;          // the last write was a frame header, buffered: a page may follow
    sqlite3_int64 lastRead;   // offset of the last read if no write came after it, else -1
    int synced;               // no read or write since the last sync
#ifdef DEBUG
    long long writes;         // writes issued to the real file (tests)
#endif
} CoalescedFile;

/// A main database file: the wrapped VFS's, and the WAL opened for it, whose buffer is written
/// when the connection releases the WAL write lock.
struct DatabaseFile {
    sqlite3_file base;        // methods: databaseMethods (databaseMethodsNoShm without shm)
    sqlite3_file *real;       // as in Wrapper
    const char *name;         // as in Wrapper
    CoalescedFile *wal;
};

static sqlite3_vfs *wrapped;
static sqlite3_vfs coalescedVFS;
static sqlite3_io_methods coalescedMethods;
static sqlite3_io_methods databaseMethods;
static sqlite3_io_methods databaseMethodsNoShm;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int registered = SQLITE_ERROR;

static sqlite3_file *realOf(sqlite3_file *f) { return ((Wrapper *)f)->real; }

// Methods either wrapper passes on to the wrapped file as they are.
static int pRead(sqlite3_file *pf, void *o, int n, sqlite3_int64 off) {
    return realOf(pf)->pMethods->xRead(realOf(pf), o, n, off);
}
static int pWrite(sqlite3_file *pf, const void *z, int n, sqlite3_int64 off) {
    return realOf(pf)->pMethods->xWrite(realOf(pf), z, n, off);
}
static int pTruncate(sqlite3_file *pf, sqlite3_int64 size) { return realOf(pf)->pMethods->xTruncate(realOf(pf), size); }
#ifdef DEBUG
static int injectedSyncFailure(sqlite3_file *pf);
#define countWrite(f) ((f)->writes++)
#else
#define injectedSyncFailure(pf) 0
#define countWrite(f) ((void)0)
#endif
static int pSync(sqlite3_file *pf, int flags) {
    if (injectedSyncFailure(pf)) return SQLITE_IOERR_FSYNC;
    return realOf(pf)->pMethods->xSync(realOf(pf), flags);
}
static int pFileSize(sqlite3_file *pf, sqlite3_int64 *size) { return realOf(pf)->pMethods->xFileSize(realOf(pf), size); }
static int pLock(sqlite3_file *pf, int level) { return realOf(pf)->pMethods->xLock(realOf(pf), level); }
static int pUnlock(sqlite3_file *pf, int level) { return realOf(pf)->pMethods->xUnlock(realOf(pf), level); }
static int pCheckReservedLock(sqlite3_file *pf, int *out) {
    return realOf(pf)->pMethods->xCheckReservedLock(realOf(pf), out);
}
static int pFileControl(sqlite3_file *pf, int op, void *arg) {
    return realOf(pf)->pMethods->xFileControl(realOf(pf), op, arg);
}
static int pSectorSize(sqlite3_file *pf) { return realOf(pf)->pMethods->xSectorSize(realOf(pf)); }
static int pDeviceCharacteristics(sqlite3_file *pf) { return realOf(pf)->pMethods->xDeviceCharacteristics(realOf(pf)); }
static int pShmMap(sqlite3_file *pf, int region, int size, int extend, void volatile **out) {
    sqlite3_file *r = realOf(pf);
    return r->pMethods->iVersion >= 2 ? r->pMethods->xShmMap(r, region, size, extend, out) : SQLITE_IOERR;
}
static int pShmLock(sqlite3_file *pf, int offset, int n, int flags) {
    sqlite3_file *r = realOf(pf);
    return r->pMethods->iVersion >= 2 ? r->pMethods->xShmLock(r, offset, n, flags) : SQLITE_IOERR;
}
static void pShmBarrier(sqlite3_file *pf) {
    sqlite3_file *r = realOf(pf);
    if (r->pMethods->iVersion >= 2) r->pMethods->xShmBarrier(r);
}
static int pShmUnmap(sqlite3_file *pf, int deleteFlag) {
    sqlite3_file *r = realOf(pf);
    return r->pMethods->iVersion >= 2 ? r->pMethods->xShmUnmap(r, deleteFlag) : SQLITE_OK;
}
static int pFetch(sqlite3_file *pf, sqlite3_int64 offset, int amount, void **out) {
    sqlite3_file *r = realOf(pf);
    *out = NULL;
    return r->pMethods->iVersion >= 3 ? r->pMethods->xFetch(r, offset, amount, out) : SQLITE_OK;
}
static int pUnfetch(sqlite3_file *pf, sqlite3_int64 offset, void *p) {
    sqlite3_file *r = realOf(pf);
    return r->pMethods->iVersion >= 3 ? r->pMethods->xUnfetch(r, offset, p) : SQLITE_OK;
}

static int drain(CoalescedFile *f) {
    int rc = SQLITE_OK;
    for (int done = 0; done < f->length && rc == SQLITE_OK; done += writeLimit) {
        int n = f->length - done < writeLimit ? f->length - done : writeLimit;
        rc = f->real->pMethods->xWrite(f->real, f->buffer + done, n, f->start + done);
        countWrite(f);
    }
    f->length = 0;
    return rc;
}

static int cClose(sqlite3_file *pf) {
    CoalescedFile *f = (CoalescedFile *)pf;
    int rc = drain(f);
    if (f->database != NULL && f->database->wal == f) f->database->wal = NULL;
    int rc2 = f->real->pMethods ? f->real->pMethods->xClose(f->real) : SQLITE_OK;
    free(f->buffer);
    f->buffer = NULL;
    return rc != SQLITE_OK ? rc : rc2;
}

static int cRead(sqlite3_file *pf, void *out, int amount, sqlite3_int64 offset) {
    int rc = drain((CoalescedFile *)pf);
    if (rc != SQLITE_OK) return rc;
    ((CoalescedFile *)pf)->lastRead = offset;
    ((CoalescedFile *)pf)->synced = 0;
    return pRead(pf, out, amount, offset);
}

/// A 24-byte write is a frame header; its bytes 4-7 (the database size after the commit)
/// are non-zero only in a commit frame.
static int isCommitHeader(const unsigned char *z, int amount) {
    return amount == frameHeaderSize && (z[4] | z[5] | z[6] | z[7]) != 0;
}

static int cWrite(sqlite3_file *pf, const void *data, int amount, sqlite3_int64 offset) {
    CoalescedFile *f = (CoalescedFile *)pf;
    const unsigned char *z = data;
    int rc;
    // A frame header written at the offset just read is walRewriteChecksums' (the commit of a
    // transaction that rewrote a spilled frame): its last is the commit frame's, and no page
    // follows it. Everything that is not an appended frame goes through at once.
    int header = amount == frameHeaderSize && offset != f->lastRead;
    // A write right after a sync is the rest of one SQLite split at the sync point, whatever
    // its size (a page's last 24 bytes look like a frame header).
    int gathered = !f->synced && (header || f->afterHeader || (amount == walHeaderSize && offset == 0));
    f->afterHeader = 0;
    f->lastRead = -1;
    f->synced = 0;
    if (f->length > 0
        && (!gathered || offset != f->start + f->length || f->length + amount > bufferCapacity)) {
        if ((rc = drain(f)) != SQLITE_OK) return rc;
    }
    if (!gathered || amount > writeLimit
        || (f->buffer == NULL && (f->buffer = malloc(bufferCapacity)) == NULL)) {
        countWrite(f);
        return f->real->pMethods->xWrite(f->real, data, amount, offset);
    }
    if (f->length == 0) f->start = offset;
    memcpy(f->buffer + f->length, z, (size_t)amount);
    f->length += amount;
    f->afterHeader = header;
    if (isCommitHeader(z, amount)) {
        f->commitPending = 1;
        return SQLITE_OK;
    }
    if (f->commitPending && amount != frameHeaderSize) {
        f->commitPending = 0;
        return drain(f);
    }
    return SQLITE_OK;
}

static int cTruncate(sqlite3_file *pf, sqlite3_int64 size) {
    int rc = drain((CoalescedFile *)pf);
    if (rc != SQLITE_OK) return rc;
    return pTruncate(pf, size);
}

static int cSync(sqlite3_file *pf, int flags) {
    int rc = drain((CoalescedFile *)pf);
    if (rc != SQLITE_OK) return rc;
    ((CoalescedFile *)pf)->synced = 1;
    return pSync(pf, flags);
}

static int cFileSize(sqlite3_file *pf, sqlite3_int64 *size) {
    int rc = drain((CoalescedFile *)pf);
    if (rc != SQLITE_OK) return rc;
    return pFileSize(pf, size);
}

static int cFileControl(sqlite3_file *pf, int op, void *arg) {
    int rc = drain((CoalescedFile *)pf);
    if (rc != SQLITE_OK) return rc;
    return realOf(pf)->pMethods->xFileControl(realOf(pf), op, arg);
}

static int cFetch(sqlite3_file *pf, sqlite3_int64 offset, int amount, void **out) {
    sqlite3_file *r = realOf(pf);
    *out = NULL;
    int rc = drain((CoalescedFile *)pf);
    if (rc != SQLITE_OK) return rc;
    return r->pMethods->iVersion >= 3 ? r->pMethods->xFetch(r, offset, amount, out) : SQLITE_OK;
}

// The main database file: every method the wrapped file's, except that releasing the WAL write
// lock first writes what the connection's WAL still holds (frames of a transaction that spilled
// and rolled back), before another connection may append frames at the same offsets.
static int dClose(sqlite3_file *pf) {
    DatabaseFile *d = (DatabaseFile *)pf;
    if (d->wal != NULL) d->wal->database = NULL;
    return d->real->pMethods ? d->real->pMethods->xClose(d->real) : SQLITE_OK;
}
static int dUnlock(sqlite3_file *pf, int level) {
    DatabaseFile *d = (DatabaseFile *)pf;
    // In exclusive locking mode SQLite takes no wal-index locks: another connection can write
    // only once this one releases its lock on the database file.
    if (d->wal != NULL && d->wal->length > 0) (void)drain(d->wal);
    return d->real->pMethods->xUnlock(d->real, level);
}
#ifdef DEBUG
static void (*_Atomic writeUnlockHook)(sqlite3_file *database);

void assetd_wal_coalesce_set_write_unlock_hook(void (*hook)(sqlite3_file *database)) { writeUnlockHook = hook; }
#endif

static int dShmLock(sqlite3_file *pf, int offset, int n, int flags) {
    DatabaseFile *d = (DatabaseFile *)pf;
    if (d->wal != NULL && offset <= walWriteLock && walWriteLock < offset + n
        && flags == (SQLITE_SHM_UNLOCK | SQLITE_SHM_EXCLUSIVE)) {
#ifdef DEBUG
        void (*hook)(sqlite3_file *) = writeUnlockHook;
        if (hook != NULL) hook(pf);
#endif
        // SQLite ignores an unlock's result; the frames are not a committed transaction's (a
        // commit's are written before it is published), so a failure here loses nothing.
        (void)drain(d->wal);
    }
    return pShmLock(pf, offset, n, flags);
}

static int cOpen(sqlite3_vfs *vfs, const char *name, sqlite3_file *pf, int flags, int *outFlags) {
    (void)vfs;
    if (flags & SQLITE_OPEN_MAIN_DB) {
        DatabaseFile *d = (DatabaseFile *)pf;
        memset(d, 0, sizeof *d);
        d->real = (sqlite3_file *)(d + 1);
        d->name = name;
        int rc = wrapped->xOpen(wrapped, name, d->real, flags, outFlags);
        if (rc == SQLITE_OK) {
            const sqlite3_io_methods *m = d->real->pMethods;
            // Without shared memory (nolock=1, say), SQLite must see none here either.
            d->base.pMethods = m->iVersion >= 2 && m->xShmMap != NULL ? &databaseMethods : &databaseMethodsNoShm;
        }
        return rc;
    }
    if (!(flags & SQLITE_OPEN_WAL)) {
        // Not a WAL: the wrapped VFS's file itself, in the space this VFS asked for.
        return wrapped->xOpen(wrapped, name, pf, flags, outFlags);
    }
    CoalescedFile *f = (CoalescedFile *)pf;
    memset(f, 0, sizeof *f);
    f->lastRead = -1;
    f->real = (sqlite3_file *)(f + 1);
    f->name = name;
    int rc = wrapped->xOpen(wrapped, name, f->real, flags, outFlags);
    // On failure SQLite calls xClose only if pMethods is set; the real file is closed by its VFS.
    if (rc == SQLITE_OK) {
        f->base.pMethods = &coalescedMethods;
        sqlite3_file *db = sqlite3_database_file_object(name);
        if (db != NULL && (db->pMethods == &databaseMethods || db->pMethods == &databaseMethodsNoShm)) {
            f->database = (DatabaseFile *)db;
            f->database->wal = f;
        }
    }
    return rc;
}

// The rest of the VFS is the wrapped one's.
static int cDelete(sqlite3_vfs *v, const char *n, int s) { (void)v; return wrapped->xDelete(wrapped, n, s); }
static int cAccess(sqlite3_vfs *v, const char *n, int f, int *o) { (void)v; return wrapped->xAccess(wrapped, n, f, o); }
static int cFullPathname(sqlite3_vfs *v, const char *n, int k, char *o) {
    (void)v;
    return wrapped->xFullPathname(wrapped, n, k, o);
}
static void *cDlOpen(sqlite3_vfs *v, const char *n) { (void)v; return wrapped->xDlOpen(wrapped, n); }
static void cDlError(sqlite3_vfs *v, int k, char *o) { (void)v; wrapped->xDlError(wrapped, k, o); }
static void (*cDlSym(sqlite3_vfs *v, void *h, const char *s))(void) { (void)v; return wrapped->xDlSym(wrapped, h, s); }
static void cDlClose(sqlite3_vfs *v, void *h) { (void)v; wrapped->xDlClose(wrapped, h); }
static int cRandomness(sqlite3_vfs *v, int k, char *o) { (void)v; return wrapped->xRandomness(wrapped, k, o); }
static int cSleep(sqlite3_vfs *v, int us) { (void)v; return wrapped->xSleep(wrapped, us); }
static int cCurrentTime(sqlite3_vfs *v, double *o) { (void)v; return wrapped->xCurrentTime(wrapped, o); }
static int cGetLastError(sqlite3_vfs *v, int k, char *o) { (void)v; return wrapped->xGetLastError(wrapped, k, o); }
static int cCurrentTimeInt64(sqlite3_vfs *v, sqlite3_int64 *o) {
    (void)v;
    return wrapped->xCurrentTimeInt64(wrapped, o);
}
static int cSetSystemCall(sqlite3_vfs *v, const char *n, sqlite3_syscall_ptr p) {
    (void)v;
    return wrapped->xSetSystemCall(wrapped, n, p);
}
static sqlite3_syscall_ptr cGetSystemCall(sqlite3_vfs *v, const char *n) {
    (void)v;
    return wrapped->xGetSystemCall(wrapped, n);
}
static const char *cNextSystemCall(sqlite3_vfs *v, const char *n) {
    (void)v;
    return wrapped->xNextSystemCall(wrapped, n);
}

static void registerOnce(void) {
    wrapped = sqlite3_vfs_find(NULL);
    if (wrapped == NULL || wrapped->iVersion < 3) return;
    coalescedMethods = (sqlite3_io_methods){
        .iVersion = 3,
        .xClose = cClose, .xRead = cRead, .xWrite = cWrite, .xTruncate = cTruncate, .xSync = cSync,
        .xFileSize = cFileSize, .xLock = pLock, .xUnlock = pUnlock, .xCheckReservedLock = pCheckReservedLock,
        .xFileControl = cFileControl, .xSectorSize = pSectorSize, .xDeviceCharacteristics = pDeviceCharacteristics,
        .xShmMap = pShmMap, .xShmLock = pShmLock, .xShmBarrier = pShmBarrier, .xShmUnmap = pShmUnmap,
        .xFetch = cFetch, .xUnfetch = pUnfetch,
    };
    databaseMethods = (sqlite3_io_methods){
        .iVersion = 3,
        .xClose = dClose, .xRead = pRead, .xWrite = pWrite, .xTruncate = pTruncate, .xSync = pSync,
        .xFileSize = pFileSize, .xLock = pLock, .xUnlock = dUnlock, .xCheckReservedLock = pCheckReservedLock,
        .xFileControl = pFileControl, .xSectorSize = pSectorSize, .xDeviceCharacteristics = pDeviceCharacteristics,
        .xShmMap = pShmMap, .xShmLock = dShmLock, .xShmBarrier = pShmBarrier, .xShmUnmap = pShmUnmap,
        .xFetch = pFetch, .xUnfetch = pUnfetch,
    };
    databaseMethodsNoShm = databaseMethods;
    databaseMethodsNoShm.xShmMap = NULL;
    databaseMethodsNoShm.xShmLock = NULL;
    databaseMethodsNoShm.xShmBarrier = NULL;
    databaseMethodsNoShm.xShmUnmap = NULL;
    size_t own = sizeof(CoalescedFile) > sizeof(DatabaseFile) ? sizeof(CoalescedFile) : sizeof(DatabaseFile);
    coalescedVFS = (sqlite3_vfs){
        .iVersion = 3,
        .szOsFile = (int)own + wrapped->szOsFile,
        .mxPathname = wrapped->mxPathname,
        .zName = ASSETD_WAL_COALESCE_VFS,
        .xOpen = cOpen, .xDelete = cDelete, .xAccess = cAccess, .xFullPathname = cFullPathname,
        .xDlOpen = cDlOpen, .xDlError = cDlError, .xDlSym = cDlSym, .xDlClose = cDlClose,
        .xRandomness = cRandomness, .xSleep = cSleep, .xCurrentTime = cCurrentTime, .xGetLastError = cGetLastError,
        .xCurrentTimeInt64 = cCurrentTimeInt64,
        .xSetSystemCall = cSetSystemCall, .xGetSystemCall = cGetSystemCall, .xNextSystemCall = cNextSystemCall,
    };
    registered = sqlite3_vfs_register(&coalescedVFS, 0);
}

int assetd_wal_coalesce_register(void) {
    pthread_once(&once, registerOnce);
    return registered;
}

#ifdef DEBUG
long long assetd_wal_coalesce_writes(sqlite3_file *wal) {
    return wal != NULL && wal->pMethods == &coalescedMethods ? ((CoalescedFile *)wal)->writes : -1;
}

// Tests: syncs of files whose path starts with a prefix fail, a given number of times.
static pthread_mutex_t syncFaultLock = PTHREAD_MUTEX_INITIALIZER;
static char *syncFaultPrefix;
static _Atomic int syncFaultsLeft;

void assetd_wal_coalesce_fail_syncs(const char *prefix, int count) {
    pthread_mutex_lock(&syncFaultLock);
    free(syncFaultPrefix);
    syncFaultPrefix = prefix != NULL && count > 0 ? strdup(prefix) : NULL;
    syncFaultsLeft = syncFaultPrefix != NULL ? count : 0;
    pthread_mutex_unlock(&syncFaultLock);
}

static int injectedSyncFailure(sqlite3_file *pf) {
    if (syncFaultsLeft == 0) return 0;
    const char *name = ((Wrapper *)pf)->name;
    int fail = 0;
    pthread_mutex_lock(&syncFaultLock);
    if (syncFaultsLeft > 0 && syncFaultPrefix != NULL && name != NULL
        && strncmp(name, syncFaultPrefix, strlen(syncFaultPrefix)) == 0) {
        syncFaultsLeft--;
        fail = 1;
    }
    pthread_mutex_unlock(&syncFaultLock);
    return fail;
}
#endif
