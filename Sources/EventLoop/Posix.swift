// The few raw syscalls libuv 1.44 cannot do for us: a Unix socket bound with a given mode
// (umask around bind, under one process-wide lock) and the peer's credentials (SO_PEERCRED).
// Errors become UVError with -errno, which is what libuv's codes are on Unix.

import CUV
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Raw syscalls made on libuv's behalf.
enum Posix {
    /// Serializes our umask changes; umask is process-wide, so two binds must not interleave.
    private static let umaskLock = Mutex(())

    /// The size of `sockaddr_un.sun_path` (108 on Linux); a path needs one byte less, for its NUL.
    static let socketPathCapacity = MemoryLayout.size(ofValue: sockaddr_un().sun_path)

    /// Throws unless `path` fits in `sun_path` with its NUL. libuv 1.44 truncates a long
    /// path silently (pipe.rst), which would bind or connect somewhere else.
    static func checkSocketPath(_ path: String, call: String) throws(UVError) {
        let bytes = path.utf8
        if bytes.isEmpty || bytes.contains(0) { throw UVError(code: UV_EINVAL.rawValue, call: call) }
        if bytes.count >= socketPathCapacity { throw UVError(code: UV_ENAMETOOLONG.rawValue, call: call) }
    }

    /// Creates a Unix stream socket bound at `path` whose file has exactly `mode`.
    ///
    /// The umask is set to the complement of `mode` around `bind`, so the file never exists
    /// with wider permissions (tmux does the same); it is restored before returning.
    /// - Returns: the bound (not yet listening) descriptor, close-on-exec.
    /// - Throws: ``UVError`` from `socket` or `bind` (`UV_EADDRINUSE` if `path` exists).
    static func bindUnixSocket(path: String, mode: mode_t) throws(UVError) -> Int32 {
        #if canImport(Glibc)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        #else
        let fd = socket(AF_UNIX, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw UVError(code: -errno, call: "socket") }

        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { sunPath in
            sunPath.copyBytes(from: path.utf8)  // fits: checkSocketPath ran first; the rest stays 0
        }
        let (result, error) = umaskLock.withLock { _ in
            let saved = umask(~mode & 0o777)
            defer { umask(saved) }
            let result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            return (result, errno)
        }
        guard result == 0 else {
            closeDescriptor(fd)
            throw UVError(code: -error, call: "bind")
        }
        return fd
    }

    /// The credentials of the process at the other end of a connected Unix socket, as the
    /// kernel recorded them at connect (or socketpair) time; nil if unavailable.
    static func peerCredentials(of fd: Int32) -> PeerCredentials? {
        #if os(Linux)
        var credentials = KernelCredentials()
        var length = socklen_t(MemoryLayout<KernelCredentials>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0,
            length == MemoryLayout<KernelCredentials>.size
        else { return nil }
        return PeerCredentials(pid: credentials.pid, uid: credentials.uid, gid: credentials.gid)
        #else
        return nil
        #endif
    }

    /// Closes a descriptor that libuv never adopted.
    static func closeDescriptor(_ fd: Int32) {
        #if canImport(Glibc)
        _ = Glibc.close(fd)  // no EINTR retry: Linux always releases the descriptor
        #else
        _ = Darwin.close(fd)
        #endif
    }

    /// Removes a socket file this process has just created, after a failed listen.
    static func removeFile(_ path: String) {
        _ = unlink(path)
    }
}

/// Linux's `struct ucred` (pid, uid, gid), which the Glibc module hides behind _GNU_SOURCE.
private struct KernelCredentials {
    var pid: Int32 = 0
    var uid: UInt32 = 0
    var gid: UInt32 = 0
}
