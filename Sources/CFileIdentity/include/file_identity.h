// What tells one file from another later created at its path (birth time, inode generation)
// and which mount a file or folder is on: statx and FS_IOC_GETVERSION, which the Glibc module
// does not export (see file_identity.c); and renameat2's RENAME_NOREPLACE, for backups.
#ifndef FILE_IDENTITY_H
#define FILE_IDENTITY_H

#include <stddef.h>
#include <stdint.h>

/// The largest size recorded for a file: 2^53 bytes (8 PiB), exact in a double.
#define ASSETD_MAX_FILE_SIZE (1LL << 53)

/// One file as statx reports it, its size capped at ASSETD_MAX_FILE_SIZE. Times are
/// nanoseconds since the epoch (mtime in two parts, as stat gives it).
struct assetd_file_stat {
    uint64_t device;
    uint64_t inode;
    uint32_t mode;
    int64_t size;
    int64_t mtime_sec;
    int64_t mtime_nsec;
    int64_t ctime_ns;
    /// 1 when the filesystem reports a birth time (STATX_BTIME).
    int has_birth;
    int64_t birth_ns;
    /// 1 when the mount is known (STATX_MNT_ID, or /proc/self/fdinfo on kernels before 5.8).
    int has_mount_id;
    uint64_t mount_id;
};

/// statx of `path` relative to `dirfd` without following a final symlink (mounts are
/// crossed, as any lookup does: compare `mount_id`); "" means `dirfd` itself. Falls back to
/// fstatat where statx is missing (no birth time then). 0, or -1 with errno set.
int assetd_file_stat(int dirfd, const char *path, struct assetd_file_stat *out);

/// `assetd_file_stat` without asking the filesystem to refresh what it caches
/// (AT_STATX_DONT_SYNC), following a final symlink when `follow` is 1 (/proc/PID/fd/N): what
/// decides whether a name is on another mount without sending that mount a request (a FUSE
/// server need never answer one). The mount id, device, inode and type are exact; size and
/// times may be stale on a network or FUSE filesystem. 0, or -1 with errno set.
int assetd_file_stat_cached(int dirfd, const char *path, int follow, struct assetd_file_stat *out);

/// `assetd_file_stat` asking the filesystem for what it has now, whatever it cached
/// (AT_STATX_FORCE_SYNC): on a network filesystem, the server's answer, not the attribute
/// cache's. 0, or -1 with errno set.
int assetd_file_stat_synced(int dirfd, const char *path, struct assetd_file_stat *out);

/// The statfs(2) type (f_type) of the file system `path` is on. 0, or -1 with errno set.
int assetd_file_system_type(const char *path, int64_t *out);

/// The inode generation of the open file `fd` (FS_IOC_GETVERSION: ext2/3/4, xfs, btrfs and
/// a few more). 0, or -1 with errno set (ENOTTY where the filesystem has none).
int assetd_file_generation(int fd, uint32_t *out);

/// 1 if the folder the O_PATH descriptor `pathfd` names has an access ACL or that cannot be
/// told (read through /proc/self/fd), 0 if it has none.
int assetd_has_access_acl(int pathfd);

/// The inode generation of the regular file the O_PATH descriptor `pathfd` names, read from
/// that very inode opened again through /proc/self/fd (never blocking, no access time where
/// permitted): no second lookup by name, so nothing swapped in since is opened. 0 with
/// `*has` set (0 where the filesystem has none), or -1 with errno set (ENOSYS: no /proc).
int assetd_generation_of_path_fd(int pathfd, int *has, uint32_t *out);

/// The inode the O_PATH descriptor `pathfd` names, opened again through /proc/self/fd with
/// `flags` (plus O_NOATIME where permitted): no lookup by name, so a mount made over the name
/// since is asked nothing. The new descriptor, or -1 with errno set (ENOSYS: no /proc).
int assetd_reopen_path_fd(int pathfd, int flags);

/// What `assetd_probe_beneath` found.
enum {
    /// A regular file, opened beneath the root: `out` holds it.
    ASSETD_PROBE_FILE = 0,
    /// Nothing at the path (a folder or the file missing, or a folder that is a file).
    ASSETD_PROBE_MISSING = 1,
    /// Anything else (a symlink or a mount on the way, no permission, not a regular file, no
    /// openat2, a root that is not the pinned folder): the caller walks the path folder by folder to tell which.
    ASSETD_PROBE_WALK = 2,
};

/// What a root was when the store opened: its path must still name this folder.
struct assetd_root_pin {
    uint64_t device;
    uint64_t inode;
    /// 1 when `mount_id` was known when pinned.
    int has_mount_id;
    uint64_t mount_id;
};


/// A regular file as `assetd_probe_beneath` found it (no mount id: none was crossed).
struct assetd_file_probe {
    struct assetd_file_stat stat;
    /// 1 when the filesystem has inode generations.
    int has_generation;
    uint32_t generation;
};

/// Finds `path` below its managed root, whose name is the first `root_length` bytes of
/// `path`, with openat2 (O_PATH) beneath the root following no symlink and crossing no mount,
/// statx-es it and, a regular file, opens that inode again through /proc/self/fd to read its
/// generation. Eight system calls however deep the path: the root opened and closed, the
/// O_PATH descriptor opened, statx-ed and closed, the file opened, ioctl, closed; one statx
/// more when `pin` (may be NULL) is given, to check the root is still the pinned folder.
int assetd_probe_beneath(
    const char *path, size_t root_length, const struct assetd_root_pin *pin, struct assetd_file_probe *out);

/// Renames `from` to `to` unless `to` exists (renameat2 with RENAME_NOREPLACE): then fails
/// with EEXIST, replacing nothing. -1 with errno EINVAL where the filesystem has no such
/// rename (NFS, many FUSE filesystems), ENOSYS before Linux 3.15.
int assetd_rename_noreplace(const char *from, const char *to);

/// An unnamed file open read-write in the folder `dir` (open with O_TMPFILE), to be linked
/// into place once written. -1 with errno EOPNOTSUPP (or EISDIR, EINVAL before Linux 3.11)
/// where the filesystem cannot make one.
int assetd_open_tmpfile(const char *dir, unsigned int mode);

#endif
