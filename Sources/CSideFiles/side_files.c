// The guard on the files SQLite opens beside a database (its `-wal`, `-shm` and `-journal`),
// and on the database's own name.
//
// SQLite's unix VFS opens them by name, lazily and on whichever thread first needs them (a
// reader's first read opens the WAL and the wal-index), and, running as root, fchowns each to
// the database file's owner and then writes or truncates it. The folder they lie in may be
// another user's (the daemon's, under User=; root runs `assetctl --db` there): that user could
// hard-link any file it may link to those names, and root would give it away and destroy it
// (docs/DESIGN.md §6). A check before SQLite's open is racy, and SQLite opens them again later
// by name. So the check is in the open itself. In SQLite's os_unix.c every such open is
// robust_open() -> osOpen (unixOpen for the WAL and journals, unixOpenSharedMemory for the
// wal-index, a reader's read-only retry too) and every fchown is robustFchown() -> osFchown,
// both overridable system calls (xSetSystemCall): one table for all the unix VFSes, and so
// for the VFSes of this package that wrap the default. The replacements here judge the file
// actually opened, by its descriptor:
// - open: a side file that is not a regular file (a directory is the database's folder), or
//   has another name (a hard link), is closed again and refused (EPERM): SQLite reports it cannot open the database. O_NONBLOCK
//   meanwhile, so that a FIFO planted there cannot hang the open.
// - fchown: only what changes no owner of anything but a file this process has just made: a
//   file already the target's is left alone; an empty regular file with one name owned by this
//   process (SQLite has just created it) is given away; anything else keeps its owner. The
//   recipient is whoever a stat of the database by name gives (SQLite's choice), and SQLite
//   still sets its mode on an empty one-name side file that exists.
// - readlink: see guardedReadlink (a symlink in the database's own name).
// Installed before main (SQLite's system calls must not change under an open database), after
// the counting allocator (query_memory.c), which SQLite accepts only before it initializes.
// A SQLite without these two system calls leaves the guard out, and a store then refuses to
// open as root (Store.swift); one that opened side files some other way would need reading
// again (3.40's os_unix.c was).

#define _GNU_SOURCE  // O_PATH
#include "side_files.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sqlite3.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef int (*OpenCall)(const char *, int, int);
typedef int (*FchownCall)(int, uid_t, gid_t);
typedef ssize_t (*ReadlinkCall)(const char *, char *, size_t);

static OpenCall realOpen;
static FchownCall realFchown;
static ReadlinkCall realReadlink;
static int guarded;

static int endsWith(const char *s, size_t n, const char *suffix) {
    size_t k = strlen(suffix);
    return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

// The names SQLite gives a database's side files (a super-journal, `-mj…`, is made only for a
// transaction over several attached databases, which assetd never runs).
static int isSideFile(const char *path) {
    size_t n = strlen(path);
    return endsWith(path, n, "-wal") || endsWith(path, n, "-shm") || endsWith(path, n, "-journal");
}

// The last -wal let through, per name: the store syncs the WAL through a descriptor of its
// own (Store+WALSync.swift), opened by name after SQLite's, and must sync the file SQLite
// writes, not one put there since. A few names: a process opens one store, tests a handful.
enum { walSlots = 16 };
static struct {
    char *path;
    dev_t dev;
    ino_t ino;
} walSeen[walSlots];
static unsigned walNext;
static pthread_mutex_t walLock = PTHREAD_MUTEX_INITIALIZER;

static void noteWAL(const char *path, const struct stat *st) {
    pthread_mutex_lock(&walLock);
    int slot = -1;
    for (int i = 0; i < walSlots; i++) {
        if (walSeen[i].path && strcmp(walSeen[i].path, path) == 0) slot = i;
    }
    if (slot < 0) {
        char *copy = strdup(path);
        if (copy) {
            slot = (int)(walNext++ % walSlots);
            free(walSeen[slot].path);
            walSeen[slot].path = copy;
        }
    }
    if (slot >= 0) {
        walSeen[slot].dev = st->st_dev;
        walSeen[slot].ino = st->st_ino;
    }
    pthread_mutex_unlock(&walLock);
}

int assetd_side_files_wal_seen(const char *path, unsigned long long *dev, unsigned long long *ino) {
    int found = 0;
    pthread_mutex_lock(&walLock);
    for (int i = 0; i < walSlots && !found; i++) {
        if (walSeen[i].path && strcmp(walSeen[i].path, path) == 0) {
            *dev = walSeen[i].dev;
            *ino = walSeen[i].ino;
            found = 1;
        }
    }
    pthread_mutex_unlock(&walLock);
    return found;
}

// Any other name SQLite opens is a database itself (or /dev/urandom for its seed): the store
// refuses a database with other names before opening it (Store+Files.swift), but by name; one
// swapped for a hard link to another file after that look would be opened here and written
// (an empty one given a schema). So a regular file with another name is refused here too, on
// the descriptor, and a FIFO or socket (a read-only open of a FIFO would wait for a writer).
static int guardedMainOpen(const char *path, int flags, int mode) {
    int fd = realOpen(path, flags | O_NONBLOCK, mode);
    if (fd < 0) return fd;
    struct stat st;
    if (fstat(fd, &st) == 0 && !(S_ISREG(st.st_mode) && st.st_nlink > 1) && !S_ISFIFO(st.st_mode) &&
        !S_ISSOCK(st.st_mode)) {
        if (!(flags & O_NONBLOCK)) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
        return fd;
    }
    close(fd);
    errno = EPERM;
    return -1;
}

static int guardedOpen(const char *path, int flags, int mode) {
    if (!path) return realOpen(path, flags, mode);
    if (!isSideFile(path)) return guardedMainOpen(path, flags, mode);
    int fd = realOpen(path, flags | O_NONBLOCK, mode);
    if (fd < 0) return fd;
    struct stat st;
    // At most one name: one that was unlinked since this open is still the file found there.
    // A directory is the database's folder, named like a side file (`/var/lib/x-wal`), which
    // SQLite opens to sync a new file's entry: refused, SQLite would silently skip that sync.
    if (fstat(fd, &st) == 0 && (S_ISDIR(st.st_mode) || (S_ISREG(st.st_mode) && st.st_nlink <= 1))) {
        if (!(flags & O_NONBLOCK)) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
        if (S_ISREG(st.st_mode) && endsWith(path, strlen(path), "-wal")) noteWAL(path, &st);
        return fd;
    }
    close(fd);
    errno = EPERM;
    return -1;
}

static int guardedFchown(int fd, uid_t uid, gid_t gid) {
    struct stat st;
    if (fstat(fd, &st) != 0) return -1;
    if (st.st_uid == uid && st.st_gid == gid) return 0;
    if (S_ISREG(st.st_mode) && st.st_nlink == 1 && st.st_size == 0 && st.st_uid == geteuid()) {
        return realFchown(fd, uid, gid);
    }
    errno = EPERM;
    return -1;
}

// SQLite resolves the symlinks in a database's name itself (xFullPathname: lstat, then
// readlink), before its O_NOFOLLOW open: a symlink the folder's owner put at the database's
// name, or at a folder of it, after the store looked (Store+Files.swift), would point root's
// opens and writes at any file. It follows only a symlink of root's or of this process's user
// (as the kernel's protected_symlinks does in sticky folders), judged on the link it reads.
static ssize_t guardedReadlink(const char *path, char *buf, size_t size) {
    int fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return -1;
    struct stat st;
    ssize_t n = -1;
    if (fstat(fd, &st) == 0) {
        if (S_ISLNK(st.st_mode) && st.st_uid != 0 && st.st_uid != geteuid()) {
            errno = EPERM;
        } else {
            n = readlinkat(fd, "", buf, size);
        }
    }
    int e = errno;
    close(fd);
    errno = e;
    return n;
}

// Priority 102: after the counting allocator's (101), since finding a VFS initializes SQLite.
__attribute__((constructor(102))) static void installGuard(void) {
    sqlite3_vfs *vfs = sqlite3_vfs_find("unix");
    if (!vfs || vfs->iVersion < 3 || !vfs->xSetSystemCall || !vfs->xGetSystemCall) return;
    realOpen = (OpenCall)vfs->xGetSystemCall(vfs, "open");
    realFchown = (FchownCall)vfs->xGetSystemCall(vfs, "fchown");
    realReadlink = (ReadlinkCall)vfs->xGetSystemCall(vfs, "readlink");
    if (!realOpen || !realFchown || !realReadlink) return;
    if (vfs->xSetSystemCall(vfs, "open", (sqlite3_syscall_ptr)guardedOpen) != SQLITE_OK) return;
    if (vfs->xSetSystemCall(vfs, "fchown", (sqlite3_syscall_ptr)guardedFchown) != SQLITE_OK) {
        vfs->xSetSystemCall(vfs, "open", (sqlite3_syscall_ptr)realOpen);
        return;
    }
    if (vfs->xSetSystemCall(vfs, "readlink", (sqlite3_syscall_ptr)guardedReadlink) != SQLITE_OK) {
        vfs->xSetSystemCall(vfs, "open", (sqlite3_syscall_ptr)realOpen);
        vfs->xSetSystemCall(vfs, "fchown", (sqlite3_syscall_ptr)realFchown);
        return;
    }
    guarded = 1;
}

int assetd_side_files_guarded(void) { return guarded; }
