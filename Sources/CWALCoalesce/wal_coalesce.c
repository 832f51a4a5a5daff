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
// Other files are the wrapped VFS's own, untouched.

#include "wal_coalesce.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

enum {
    frameHeaderSize = 24,      // WAL_FRAME_HDRSIZE
    bufferCapacity = 1 << 20,  // a bigger transaction is written a MiB at a time
    // The unix VFS keeps only the low 17 bits of a write's length (seekAndWriteFd: SQLite
    // itself never writes more than a page), so a buffer goes down in pieces below 128 KiB.
    writeLimit = 31 * 4096,
};

typedef struct CoalescedFile {
    sqlite3_file base;        // methods: coalescedMethods
    sqlite3_file *real;       // the wrapped VFS's file, in the same allocation, after this
    unsigned char *buffer;    // allocated on the first write (readers never write the WAL)
    sqlite3_int64 start;      // file offset of buffer[0]
    int length;
    int pageSize;             // the size of the write after a commit frame's header, 0: none due
    int commitPending;        // the last header buffered was a commit frame's
    long long writes;         // writes issued to the real file (tests)
} CoalescedFile;

static sqlite3_vfs *wrapped;
static sqlite3_vfs coalescedVFS;
static sqlite3_io_methods coalescedMethods;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int registered = SQLITE_ERROR;

static sqlite3_file *realOf(sqlite3_file *f) { return ((CoalescedFile *)f)->real; }

static int drain(CoalescedFile *f) {
    int rc = SQLITE_OK;
    for (int done = 0; done < f->length && rc == SQLITE_OK; done += writeLimit) {
        int n = f->length - done < writeLimit ? f->length - done : writeLimit;
        rc = f->real->pMethods->xWrite(f->real, f->buffer + done, n, f->start + done);
        f->writes++;
    }
    f->length = 0;
    return rc;
}

static int cClose(sqlite3_file *pf) {
    CoalescedFile *f = (CoalescedFile *)pf;
    int rc = drain(f);
    int rc2 = f->real->pMethods ? f->real->pMethods->xClose(f->real) : SQLITE_OK;
    free(f->buffer);
    f->buffer = NULL;
    return rc != SQLITE_OK ? rc : rc2;
}

static int cRead(sqlite3_file *pf, void *out, int amount, sqlite3_int64 offset) {
    int rc = drain((CoalescedFile *)pf);
    if (rc != SQLITE_OK) return rc;
    return realOf(pf)->pMethods->xRead(realOf(pf), out, amount, offset);
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
    if (f->length > 0 && (offset != f->start + f->length || f->length + amount > bufferCapacity)) {
        if ((rc = drain(f)) != SQLITE_OK) return rc;
    }
    if (amount > writeLimit || (f->buffer == NULL && (f->buffer = malloc(bufferCapacity)) == NULL)) {
        f->writes++;
        return f->real->pMethods->xWrite(f->real, data, amount, offset);
    }
    if (f->length == 0) f->start = offset;
    memcpy(f->buffer + f->length, z, (size_t)amount);
    f->length += amount;
    if (isCommitHeader(z, amount)) {
        f->commitPending = 1;
        return SQLITE_OK;
    }
    // A header and its page in one write (not what SQLite does today, but cheap to honour).
    int combinedCommit = amount > frameHeaderSize && isCommitHeader(z, frameHeaderSize)
        && ((amount - frameHeaderSize) & (amount - frameHeaderSize - 1)) == 0;
    if ((f->commitPending && amount != frameHeaderSize) || combinedCommit) {
        f->commitPending = 0;
        return drain(f);
    }
    return SQLITE_OK;
}

static int cTruncate(sqlite3_file *pf, sqlite3_int64 size) {
    int rc = drain((CoalescedFile *)pf);
    if (rc != SQLITE_OK) return rc;
    return realOf(pf)->pMethods->xTruncate(realOf(pf), size);
}

static int cSync(sqlite3_file *pf, int flags) {
    int rc = drain((CoalescedFile *)pf);
    if (rc != SQLITE_OK) return rc;
    return realOf(pf)->pMethods->xSync(realOf(pf), flags);
}

static int cFileSize(sqlite3_file *pf, sqlite3_int64 *size) {
    int rc = drain((CoalescedFile *)pf);
    if (rc != SQLITE_OK) return rc;
    return realOf(pf)->pMethods->xFileSize(realOf(pf), size);
}

static int cLock(sqlite3_file *pf, int level) { return realOf(pf)->pMethods->xLock(realOf(pf), level); }
static int cUnlock(sqlite3_file *pf, int level) { return realOf(pf)->pMethods->xUnlock(realOf(pf), level); }

static int cCheckReservedLock(sqlite3_file *pf, int *out) {
    return realOf(pf)->pMethods->xCheckReservedLock(realOf(pf), out);
}

static int cFileControl(sqlite3_file *pf, int op, void *arg) {
    int rc = drain((CoalescedFile *)pf);
    if (rc != SQLITE_OK) return rc;
    return realOf(pf)->pMethods->xFileControl(realOf(pf), op, arg);
}

static int cSectorSize(sqlite3_file *pf) { return realOf(pf)->pMethods->xSectorSize(realOf(pf)); }

static int cDeviceCharacteristics(sqlite3_file *pf) {
    return realOf(pf)->pMethods->xDeviceCharacteristics(realOf(pf));
}

static int cShmMap(sqlite3_file *pf, int region, int size, int extend, void volatile **out) {
    sqlite3_file *r = realOf(pf);
    return r->pMethods->iVersion >= 2 ? r->pMethods->xShmMap(r, region, size, extend, out) : SQLITE_IOERR;
}

static int cShmLock(sqlite3_file *pf, int offset, int n, int flags) {
    sqlite3_file *r = realOf(pf);
    return r->pMethods->iVersion >= 2 ? r->pMethods->xShmLock(r, offset, n, flags) : SQLITE_IOERR;
}

static void cShmBarrier(sqlite3_file *pf) {
    sqlite3_file *r = realOf(pf);
    if (r->pMethods->iVersion >= 2) r->pMethods->xShmBarrier(r);
}

static int cShmUnmap(sqlite3_file *pf, int deleteFlag) {
    sqlite3_file *r = realOf(pf);
    return r->pMethods->iVersion >= 2 ? r->pMethods->xShmUnmap(r, deleteFlag) : SQLITE_OK;
}

static int cFetch(sqlite3_file *pf, sqlite3_int64 offset, int amount, void **out) {
    sqlite3_file *r = realOf(pf);
    *out = NULL;
    int rc = drain((CoalescedFile *)pf);
    if (rc != SQLITE_OK) return rc;
    return r->pMethods->iVersion >= 3 ? r->pMethods->xFetch(r, offset, amount, out) : SQLITE_OK;
}

static int cUnfetch(sqlite3_file *pf, sqlite3_int64 offset, void *p) {
    sqlite3_file *r = realOf(pf);
    return r->pMethods->iVersion >= 3 ? r->pMethods->xUnfetch(r, offset, p) : SQLITE_OK;
}

static int cOpen(sqlite3_vfs *vfs, const char *name, sqlite3_file *pf, int flags, int *outFlags) {
    (void)vfs;
    if (!(flags & SQLITE_OPEN_WAL)) {
        // Not a WAL: the wrapped VFS's file itself, in the space this VFS asked for.
        return wrapped->xOpen(wrapped, name, pf, flags, outFlags);
    }
    CoalescedFile *f = (CoalescedFile *)pf;
    memset(f, 0, sizeof *f);
    f->real = (sqlite3_file *)(f + 1);
    int rc = wrapped->xOpen(wrapped, name, f->real, flags, outFlags);
    // On failure SQLite calls xClose only if pMethods is set; the real file is closed by its VFS.
    if (rc == SQLITE_OK) f->base.pMethods = &coalescedMethods;
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
        .xFileSize = cFileSize, .xLock = cLock, .xUnlock = cUnlock, .xCheckReservedLock = cCheckReservedLock,
        .xFileControl = cFileControl, .xSectorSize = cSectorSize, .xDeviceCharacteristics = cDeviceCharacteristics,
        .xShmMap = cShmMap, .xShmLock = cShmLock, .xShmBarrier = cShmBarrier, .xShmUnmap = cShmUnmap,
        .xFetch = cFetch, .xUnfetch = cUnfetch,
    };
    coalescedVFS = (sqlite3_vfs){
        .iVersion = 3,
        .szOsFile = (int)sizeof(CoalescedFile) + wrapped->szOsFile,
        .mxPathname = wrapped->mxPathname,
        .zName = "assetd-coalesce",
        .xOpen = cOpen, .xDelete = cDelete, .xAccess = cAccess, .xFullPathname = cFullPathname,
        .xDlOpen = cDlOpen, .xDlError = cDlError, .xDlSym = cDlSym, .xDlClose = cDlClose,
        .xRandomness = cRandomness, .xSleep = cSleep, .xCurrentTime = cCurrentTime, .xGetLastError = cGetLastError,
        .xCurrentTimeInt64 = cCurrentTimeInt64,
        .xSetSystemCall = cSetSystemCall, .xGetSystemCall = cGetSystemCall, .xNextSystemCall = cNextSystemCall,
    };
    registered = sqlite3_vfs_register(&coalescedVFS, 1);
}

int assetd_wal_coalesce_register(void) {
    pthread_once(&once, registerOnce);
    return registered;
}

long long assetd_wal_coalesce_writes(sqlite3_file *wal) {
    return wal != NULL && wal->pMethods == &coalescedMethods ? ((CoalescedFile *)wal)->writes : -1;
}
