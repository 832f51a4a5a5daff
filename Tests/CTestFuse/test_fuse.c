// A FUSE server that answers INIT only: any other request (a statx's GETATTR of its root
// included) is held unanswered, as a client's server on a mount below a root may hold it,
// until `assetd_test_fuse_unmount` answers them all with EIO. Requests from this process's
// threads are counted: a fixed assetd sends none.
#define _GNU_SOURCE
#include "test_fuse.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

enum { max_held = 1024 };

struct assetd_test_fuse {
    int fd;
    int stop[2];  // a pipe: written to stop the thread
    char *target;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t changed;  // a request of ours came, or woken
    int woken;
    long ours;
    int releasing;
    long held;
    uint64_t unique[max_held];
};

static void reply_error(int fd, uint64_t unique, int error) {
    struct fuse_out_header h = {.len = sizeof h, .error = -error, .unique = unique};
    (void)!write(fd, &h, sizeof h);
}

// True when `tid` is a thread of this process.
static int ours(uint32_t tid) {
    char name[64];
    snprintf(name, sizeof name, "/proc/self/task/%u", tid);
    return tid != 0 && access(name, F_OK) == 0;
}

static void *serve(void *arg) {
    struct assetd_test_fuse *f = arg;
    // Room for the largest request: a write of max_write bytes and its headers.
    size_t size = FUSE_MIN_READ_BUFFER + 65536;
    char *buf = malloc(size);
    if (!buf) return NULL;
    for (;;) {
        struct pollfd p[2] = {{.fd = f->fd, .events = POLLIN}, {.fd = f->stop[0], .events = POLLIN}};
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (p[1].revents) break;
        if (!(p[0].revents & POLLIN)) break;  // the connection went (POLLERR)
        ssize_t n = read(f->fd, buf, size);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == ENOENT) continue;
            break;
        }
        if ((size_t)n < sizeof(struct fuse_in_header)) continue;
        struct fuse_in_header *in = (struct fuse_in_header *)buf;
        if (in->opcode == FUSE_INIT) {
            struct fuse_init_in *ii = (struct fuse_init_in *)(in + 1);
            struct {
                struct fuse_out_header h;
                struct fuse_init_out o;
            } r;
            memset(&r, 0, sizeof r);
            r.h.len = sizeof r;
            r.h.unique = in->unique;
            r.o.major = FUSE_KERNEL_VERSION;
            r.o.minor = ii->minor < FUSE_KERNEL_MINOR_VERSION ? ii->minor : FUSE_KERNEL_MINOR_VERSION;
            r.o.max_write = 65536;
            r.o.max_readahead = ii->max_readahead;
            (void)!write(f->fd, &r, sizeof r);
            continue;
        }
        // FORGET and BATCH_FORGET take no answer; INTERRUPT is answered by answering the request.
        if (in->opcode == FUSE_FORGET || in->opcode == FUSE_BATCH_FORGET || in->opcode == FUSE_INTERRUPT) continue;
        pthread_mutex_lock(&f->lock);
        if (ours(in->pid)) {
            f->ours++;
            pthread_cond_broadcast(&f->changed);
        }
        if (f->releasing || f->held == max_held) {
            reply_error(f->fd, in->unique, EIO);
        } else {
            f->unique[f->held++] = in->unique;
        }
        pthread_mutex_unlock(&f->lock);
    }
    free(buf);
    return NULL;
}

struct assetd_test_fuse *assetd_test_fuse_mount(const char *target) {
    return assetd_test_fuse_mount_mode(target, 040755);
}

struct assetd_test_fuse *assetd_test_fuse_mount_mode(const char *target, unsigned rootmode) {
    struct assetd_test_fuse *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    f->fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
    if (f->fd < 0) {
        int e = errno;
        free(f);
        errno = e;
        return NULL;
    }
    char opts[128];
    snprintf(
        opts, sizeof opts, "fd=%d,rootmode=%o,user_id=%u,group_id=%u,allow_other", f->fd, rootmode, getuid(), getgid());
    if (mount("assetd-test", target, "fuse.assetd-test", MS_NOSUID | MS_NODEV, opts) != 0 || pipe2(f->stop, O_CLOEXEC) != 0) {
        int e = errno;
        umount2(target, MNT_DETACH);
        close(f->fd);
        free(f);
        errno = e;
        return NULL;
    }
    f->target = strdup(target);
    pthread_mutex_init(&f->lock, NULL);
    pthread_cond_init(&f->changed, NULL);
    if (pthread_create(&f->thread, NULL, serve, f) != 0) {
        umount2(target, MNT_DETACH);
        close(f->fd);
        close(f->stop[0]);
        close(f->stop[1]);
        free(f->target);
        free(f);
        errno = EAGAIN;
        return NULL;
    }
    return f;
}

long assetd_test_fuse_requests(struct assetd_test_fuse *f) {
    pthread_mutex_lock(&f->lock);
    long n = f->ours;
    pthread_mutex_unlock(&f->lock);
    return n;
}

int assetd_test_fuse_wait(struct assetd_test_fuse *f) {
    pthread_mutex_lock(&f->lock);
    while (!f->woken && f->ours == 0) pthread_cond_wait(&f->changed, &f->lock);
    int asked = f->ours > 0;
    pthread_mutex_unlock(&f->lock);
    return asked;
}

void assetd_test_fuse_wake(struct assetd_test_fuse *f) {
    pthread_mutex_lock(&f->lock);
    f->woken = 1;
    pthread_cond_broadcast(&f->changed);
    pthread_mutex_unlock(&f->lock);
}

long assetd_test_fuse_waiting(struct assetd_test_fuse *f) {
    pthread_mutex_lock(&f->lock);
    long n = f->held;
    pthread_mutex_unlock(&f->lock);
    return n;
}

void assetd_test_fuse_unmount(struct assetd_test_fuse *f) {
    pthread_mutex_lock(&f->lock);
    f->releasing = 1;
    for (long i = 0; i < f->held; i++) reply_error(f->fd, f->unique[i], EIO);
    f->held = 0;
    pthread_mutex_unlock(&f->lock);
    umount2(f->target, MNT_DETACH);
    (void)!write(f->stop[1], "x", 1);
    pthread_join(f->thread, NULL);
    // The last descriptor of the connection: the kernel aborts it, failing anything still asked.
    close(f->fd);
    close(f->stop[0]);
    close(f->stop[1]);
    pthread_cond_destroy(&f->changed);
    pthread_mutex_destroy(&f->lock);
    free(f->target);
    free(f);
}
