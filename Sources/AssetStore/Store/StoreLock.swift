// The lock next to the database (`<db>.lock`): one process at a time writes and drains
// the unlink queue. flock is per open file, so a second open in the same process conflicts too.

import Glibc
import Synchronization

final class StoreLock {
    private let fd: Int32

    /// Takes the lock or throws `busy` naming the holder's pid when it can tell.
    init(path: String) throws(StoreError) {
        // Never through a symlink, and only a regular file: it is truncated and written.
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0o644)
        guard fd >= 0 else {
            throw StoreError(.permissionDenied, "cannot open lock file \(path): \(errnoDescription(errno))")
        }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            throw StoreError(.permissionDenied, "cannot open lock file \(path): not a regular file")
        }
        var tries = 0
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let e = errno
            var buf = [UInt8](repeating: 0, count: 32)
            let n = pread(fd, &buf, 31, 0)
            let holder = n > 0 ? String(decoding: buf[0..<n], as: UTF8.self).trimmingCharacters(in: " \n") : ""
            // Held by this process's own pid: after a close, a child this process forked may
            // still share the lock file until its exec closes it (O_CLOEXEC acts only then).
            // That passes within moments; a store still open here does not, and stays busy.
            if e == EWOULDBLOCK, holder == "\(getpid())", tries < StoreLock.ownRetries {
                tries += 1
                StoreLock.ownPidRetried.withLock { $0 }?(path)
                usleep(2_000)
                continue
            }
            close(fd)
            if e == EWOULDBLOCK {
                throw StoreError(
                    .busy, "the database is held by another process" + (holder.isEmpty ? "" : " (pid \(holder))"))
            }
            throw StoreError(.permissionDenied, "cannot lock \(path): \(errnoDescription(e))")
        }
        let pid = "\(getpid())\n"
        _ = ftruncate(fd, 0)
        _ = pid.withCString { pwrite(fd, $0, strlen($0), 0) }
        self.fd = fd
    }

    deinit { close(fd) }  // closing releases the flock

    /// Retries, 2 ms apart, while the lock is held under this process's own pid.
    static let ownRetries = 50
    /// Tests: runs with the lock file's path before each of those retries.
    static let ownPidRetried = Mutex<(@Sendable (String) -> Void)?>(nil)
}
