// statx, FS_IOC_GETVERSION and openat2 for FileIdentity.swift and FileProbe.swift, fenced
// here: the Glibc module exports none of them. A kernel without statx (before 4.11) gets
// fstatat; one without STATX_MNT_ID (before 5.8) gets the mount id from /proc/self/fdinfo
// through an O_PATH descriptor; one without openat2 (before 5.6) has every probe walk. And
// renameat2, which the Glibc module does not export either, for a backup's final name; and
// O_TMPFILE (a macro Swift does not import), for a root's marker.
#define _GNU_SOURCE
#include "file_identity.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#ifndef STATX_MNT_ID
#define STATX_MNT_ID 0x00001000U
#endif

static int mount_id_from_fdinfo(int fd, uint64_t *out) {
    char name[64];
    snprintf(name, sizeof name, "/proc/self/fdinfo/%d", fd);
    FILE *f = fopen(name, "re");
    if (!f) return -1;
    char line[256];
    int found = -1;
    while (fgets(line, sizeof line, f)) {
        unsigned long long id;
        if (sscanf(line, "mnt_id: %llu", &id) == 1) {
            *out = id;
            found = 0;
            break;
        }
    }
    fclose(f);
    return found;
}

// A file may claim any size up to 2^63-1 (sparse, `truncate -s 6E`): recorded sizes are
// capped so that sums of them stay far from overflowing (AssetStore's Sizes.maxFile).
static int64_t capped_size(uint64_t size) {
    return size > ASSETD_MAX_FILE_SIZE ? ASSETD_MAX_FILE_SIZE : (int64_t)size;
}

static void fill_from_statx(const struct statx *sx, struct assetd_file_stat *out) {
    // As st_dev reads it (glibc's makedev), so it compares with stat's numbers.
    uint64_t major = sx->stx_dev_major, minor = sx->stx_dev_minor;
    out->device = ((major & 0xfffff000ULL) << 32) | ((major & 0xfffULL) << 8) | ((minor & 0xffffff00ULL) << 12)
        | (minor & 0xffULL);
    out->inode = sx->stx_ino;
    out->mode = sx->stx_mode;
    out->size = capped_size(sx->stx_size);
    out->mtime_sec = sx->stx_mtime.tv_sec;
    out->mtime_nsec = sx->stx_mtime.tv_nsec;
    out->ctime_ns = (int64_t)sx->stx_ctime.tv_sec * 1000000000LL + sx->stx_ctime.tv_nsec;
    if (sx->stx_mask & STATX_BTIME) {
        out->has_birth = 1;
        out->birth_ns = (int64_t)sx->stx_btime.tv_sec * 1000000000LL + sx->stx_btime.tv_nsec;
    }
}

#ifndef AT_STATX_FORCE_SYNC
#define AT_STATX_FORCE_SYNC 0x2000
#endif
#ifndef AT_STATX_DONT_SYNC
#define AT_STATX_DONT_SYNC 0x4000
#endif

// statx with `flags` (AT_SYMLINK_NOFOLLOW, AT_STATX_DONT_SYNC or _FORCE_SYNC); AT_EMPTY_PATH for "".
static int file_stat(int dirfd, const char *path, int flags, struct assetd_file_stat *out) {
    memset(out, 0, sizeof *out);
    flags |= path[0] == 0 ? AT_EMPTY_PATH : 0;
    struct statx sx;
    if (statx(dirfd, path, flags, STATX_BASIC_STATS | STATX_BTIME | STATX_MNT_ID, &sx) == 0) {
        fill_from_statx(&sx, out);
        if (sx.stx_mask & STATX_MNT_ID) {
            out->has_mount_id = 1;
            out->mount_id = sx.stx_mnt_id;
            return 0;
        }
    } else if (errno == ENOSYS) {
        struct stat st;
        if (fstatat(dirfd, path, &st, flags & ~(AT_STATX_DONT_SYNC | AT_STATX_FORCE_SYNC)) != 0) return -1;
        out->device = st.st_dev;
        out->inode = st.st_ino;
        out->mode = st.st_mode;
        out->size = capped_size((uint64_t)st.st_size);
        out->mtime_sec = st.st_mtim.tv_sec;
        out->mtime_nsec = st.st_mtim.tv_nsec;
        out->ctime_ns = (int64_t)st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec;
    } else {
        return -1;
    }
    // No mount id from statx: ask fdinfo about an O_PATH descriptor of the same thing.
    int saved = errno;
    int nofollow = flags & AT_SYMLINK_NOFOLLOW ? O_NOFOLLOW : 0;
    int fd = path[0] == 0 ? dirfd : openat(dirfd, path, O_PATH | nofollow | O_CLOEXEC);
    if (fd >= 0) {
        if (mount_id_from_fdinfo(fd, &out->mount_id) == 0) out->has_mount_id = 1;
        if (fd != dirfd) close(fd);
    }
    errno = saved;
    return 0;
}

int assetd_file_stat(int dirfd, const char *path, struct assetd_file_stat *out) {
    return file_stat(dirfd, path, AT_SYMLINK_NOFOLLOW, out);
}

// AT_STATX_DONT_SYNC: a filesystem that would ask its server (FUSE, NFS, SMB) answers from its
// cache; a FUSE server that never answers cannot hold the caller. The mount id, device, inode
// and file type are the kernel's own (an inode's type never changes); sizes and times may be stale.
int assetd_file_stat_cached(int dirfd, const char *path, int follow, struct assetd_file_stat *out) {
    return file_stat(dirfd, path, (follow ? 0 : AT_SYMLINK_NOFOLLOW) | AT_STATX_DONT_SYNC, out);
}

// AT_STATX_FORCE_SYNC: a network filesystem asks its server for the inode's attributes now,
// whatever it cached (NFS, SMB, Ceph, AFS; a local one has nothing to ask).
int assetd_file_stat_synced(int dirfd, const char *path, struct assetd_file_stat *out) {
    return file_stat(dirfd, path, AT_SYMLINK_NOFOLLOW | AT_STATX_FORCE_SYNC, out);
}

int assetd_file_system_type(const char *path, int64_t *out) {
    struct statfs fs;
    if (statfs(path, &fs) != 0) return -1;
    *out = (int64_t)fs.f_type;
    return 0;
}

int assetd_file_generation(int fd, uint32_t *out) {
    // The kernel writes an int whatever the ioctl number says (ext4, xfs and btrfs alike).
    int generation = 0;
    if (ioctl(fd, FS_IOC_GETVERSION, &generation) != 0) return -1;
    *out = (uint32_t)generation;
    return 0;
}

// Set once openat2 is known to be missing (before Linux 5.6): every probe then walks.
static int no_openat2;

// 1 once /proc/self/fd is known to be procfs, -1 once known not to be (a chroot or an image
// without /proc mounted, where /proc/self/fd/N could be an ordinary symlink to anything):
// then every probe walks, whose open by name checks what it opened.
static int proc_fd_state;

static int proc_fd_is_procfs(void) {
    int state = __atomic_load_n(&proc_fd_state, __ATOMIC_RELAXED);
    if (state == 0) {
        struct statfs fs;
        state = statfs("/proc/self/fd", &fs) == 0 && fs.f_type == PROC_SUPER_MAGIC ? 1 : -1;
        __atomic_store_n(&proc_fd_state, state, __ATOMIC_RELAXED);
    }
    return state == 1;
}

static int open_beneath(int rootfd, const char *below, uint64_t flags) {
    struct open_how how = {
        .flags = flags,
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV,
    };
    return (int)syscall(SYS_openat2, rootfd, below, &how, sizeof how);
}

// 1 when the open folder `fd` is the pinned one (device, inode, and mount where both know
// it); 0 when it is another; -1 with errno set when it cannot be told.
static int root_matches(int fd, const struct assetd_root_pin *pin) {
    struct assetd_file_stat st;
    if (assetd_file_stat(fd, "", &st) != 0) return -1;
    if (st.device != pin->device || st.inode != pin->inode) return 0;
    return !(st.has_mount_id && pin->has_mount_id && st.mount_id != pin->mount_id);
}

int assetd_reopen_path_fd(int pathfd, int flags) {
    if (!proc_fd_is_procfs()) {
        errno = ENOSYS;
        return -1;
    }
    char name[40];
    snprintf(name, sizeof name, "/proc/self/fd/%d", pathfd);
    // O_NOATIME needs ownership or CAP_FOWNER.
    int fd = open(name, flags | O_NOATIME);
    if (fd < 0 && errno == EPERM) fd = open(name, flags);
    return fd;
}

int assetd_generation_of_path_fd(int pathfd, int *has, uint32_t *out) {
    *has = 0;
    // Never blocking (a lease someone holds).
    int fd = assetd_reopen_path_fd(pathfd, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return -1;
    if (assetd_file_generation(fd, out) == 0) *has = 1;
    close(fd);
    return 0;
}

int assetd_probe_beneath(
    const char *path, size_t root_length, const struct assetd_root_pin *pin, struct assetd_file_probe *out) {
    memset(out, 0, sizeof *out);
    if (__atomic_load_n(&no_openat2, __ATOMIC_RELAXED) || !proc_fd_is_procfs() || root_length == 0
        || root_length >= PATH_MAX || strnlen(path, root_length + 1) <= root_length || path[root_length] != '/')
        return ASSETD_PROBE_WALK;
    char root[PATH_MAX];
    memcpy(root, path, root_length);
    root[root_length] = 0;
    // The root is configuration: its symlinks are followed, and it is opened at every probe
    // so that a root remounted or moved since is seen.
    int rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0) return ASSETD_PROBE_WALK;
    // Its path followed, it must still be the folder it was when the store opened: a folder
    // above it that others can write lets them swap the root for a symlink to anywhere.
    // Another one is judged by the caller's walk (a disk mounted there since is fine).
    if (pin && root_matches(rootfd, pin) != 1) {
        close(rootfd);
        return ASSETD_PROBE_WALK;
    }
    // O_PATH: nothing is opened for reading before statx says it is a regular file (a fifo
    // opened and closed would release a writer waiting for a reader into a broken pipe).
    const char *below = path + root_length + 1;
    int pfd = open_beneath(rootfd, below, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    int saved = errno;
    close(rootfd);
    if (pfd < 0) {
        if (saved == ENOSYS) __atomic_store_n(&no_openat2, 1, __ATOMIC_RELAXED);
        // Nothing there: a folder or the file is missing, or a folder is a file.
        if (saved == ENOENT || saved == ENOTDIR) return ASSETD_PROBE_MISSING;
        // A symlink (ELOOP), a mount (EXDEV), no permission: the walk tells which.
        return ASSETD_PROBE_WALK;
    }
    struct statx sx;
    if (statx(pfd, "", AT_EMPTY_PATH, STATX_BASIC_STATS | STATX_BTIME, &sx) != 0 || !S_ISREG(sx.stx_mode)) {
        close(pfd);
        return ASSETD_PROBE_WALK;
    }
    fill_from_statx(&sx, &out->stat);
    // The generation needs a readable descriptor: the very inode statx-ed, opened again
    // through /proc (no second lookup by name, so nothing can be swapped in between).
    int has = 0;
    uint32_t generation = 0;
    int r = assetd_generation_of_path_fd(pfd, &has, &generation);
    saved = errno;
    close(pfd);
    if (r != 0) {
        // Not readable: the other fields still tell, as they do in the walk. No /proc: walk.
        return saved == EACCES ? ASSETD_PROBE_FILE : ASSETD_PROBE_WALK;
    }
    out->has_generation = has;
    out->generation = generation;
    return ASSETD_PROBE_FILE;
}

int assetd_has_access_acl(int pathfd) {
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", pathfd);
    if (getxattr(proc, "system.posix_acl_access", NULL, 0) >= 0) return 1;
    return errno == ENODATA || errno == EOPNOTSUPP ? 0 : 1;
}

int assetd_rename_noreplace(const char *from, const char *to) {
    return (int)syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE);
}

int assetd_open_tmpfile(const char *dir, unsigned int mode) {
    return open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, (mode_t)mode);
}
