// A FUSE filesystem for tests that answers INIT and nothing else, as a client's own server may
// (FileLifecycleTests' FuseMountTests): every later request waits until the test lets it go.
#ifndef TEST_FUSE_H
#define TEST_FUSE_H

/// One mount and the thread serving it.
struct assetd_test_fuse;

/// Mounts the filesystem on the folder `target` (allow_other, as a user's mount with
/// user_allow_other) and starts its server thread. NULL with errno set when this process may
/// not (no /dev/fuse, no CAP_SYS_ADMIN).
struct assetd_test_fuse *assetd_test_fuse_mount(const char *target);

/// `assetd_test_fuse_mount` with the root's mode: 0100644 mounts a file over the file `target`.
struct assetd_test_fuse *assetd_test_fuse_mount_mode(const char *target, unsigned rootmode);

/// Waits until the server got a request from this process's threads (1) or
/// `assetd_test_fuse_wake` was called (0): a test's bound that only a hang reaches, no clock.
int assetd_test_fuse_wait(struct assetd_test_fuse *fuse);

/// Lets `assetd_test_fuse_wait` return (now or at its next call).
void assetd_test_fuse_wake(struct assetd_test_fuse *fuse);

/// Requests other than INIT the server has received from this process's threads so far.
long assetd_test_fuse_requests(struct assetd_test_fuse *fuse);

/// Requests it is holding unanswered now, from any process.
long assetd_test_fuse_waiting(struct assetd_test_fuse *fuse);

/// Answers every held request (and any later one) with EIO, so a caller waiting on one goes
/// on; detaches the mount, stops the thread, aborts the connection and frees `fuse`.
void assetd_test_fuse_unmount(struct assetd_test_fuse *fuse);

#endif
