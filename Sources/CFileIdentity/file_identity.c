// statx and FS_IOC_GETVERSION for FileIdentity.swift, fenced here: the Glibc module exports
// neither. A kernel without statx (before 4.11) gets fstatat; one without STATX_MNT_ID
// (before 5.8) gets the mount id from /proc/self/fdinfo through an O_PATH descriptor.
#define _GNU_SOURCE
#include "file_identity.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
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

int assetd_file_stat(int dirfd, const char *path, struct assetd_file_stat *out) {
    memset(out, 0, sizeof *out);
    int flags = AT_SYMLINK_NOFOLLOW | (path[0] == 0 ? AT_EMPTY_PATH : 0);
    struct statx sx;
    if (statx(dirfd, path, flags, STATX_BASIC_STATS | STATX_BTIME | STATX_MNT_ID, &sx) == 0) {
        // As st_dev reads it (glibc's makedev), so it compares with stat's numbers.
        uint64_t major = sx.stx_dev_major, minor = sx.stx_dev_minor;
        out->device = ((major & 0xfffff000ULL) << 32) | ((major & 0xfffULL) << 8)
            | ((minor & 0xffffff00ULL) << 12) | (minor & 0xffULL);
        out->inode = sx.stx_ino;
        out->mode = sx.stx_mode;
        out->size = (int64_t)sx.stx_size;
        out->mtime_sec = sx.stx_mtime.tv_sec;
        out->mtime_nsec = sx.stx_mtime.tv_nsec;
        out->ctime_ns = (int64_t)sx.stx_ctime.tv_sec * 1000000000LL + sx.stx_ctime.tv_nsec;
        if (sx.stx_mask & STATX_BTIME) {
            out->has_birth = 1;
            out->birth_ns = (int64_t)sx.stx_btime.tv_sec * 1000000000LL + sx.stx_btime.tv_nsec;
        }
        if (sx.stx_mask & STATX_MNT_ID) {
            out->has_mount_id = 1;
            out->mount_id = sx.stx_mnt_id;
            return 0;
        }
    } else if (errno == ENOSYS) {
        struct stat st;
        if (fstatat(dirfd, path, &st, flags) != 0) return -1;
        out->device = st.st_dev;
        out->inode = st.st_ino;
        out->mode = st.st_mode;
        out->size = st.st_size;
        out->mtime_sec = st.st_mtim.tv_sec;
        out->mtime_nsec = st.st_mtim.tv_nsec;
        out->ctime_ns = (int64_t)st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec;
    } else {
        return -1;
    }
    // No mount id from statx: ask fdinfo about an O_PATH descriptor of the same thing.
    int saved = errno;
    int fd = path[0] == 0 ? dirfd : openat(dirfd, path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
        if (mount_id_from_fdinfo(fd, &out->mount_id) == 0) out->has_mount_id = 1;
        if (fd != dirfd) close(fd);
    }
    errno = saved;
    return 0;
}

int assetd_file_generation(int fd, uint32_t *out) {
    // The kernel writes an int whatever the ioctl number says (ext4, xfs and btrfs alike).
    int generation = 0;
    if (ioctl(fd, FS_IOC_GETVERSION, &generation) != 0) return -1;
    *out = (uint32_t)generation;
    return 0;
}
