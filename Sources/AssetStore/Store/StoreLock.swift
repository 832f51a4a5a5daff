// The lock next to the database (`<db>.lock`): one process at a time writes and drains
// the unlink queue. flock is per open file, so a second open in the same process conflicts too.

import Glibc
import JSON
import Synchronization

final class StoreLock {
    private let fd: Int32

    /// Takes the lock or throws `busy` naming the holder's pid and what it is (`detail`'s `pid`
    /// and `holder`) when it can tell. The lock file holds this process's pid and `holder`. A
    /// lock file this creates is given to `owner` (the database's, when root opens another
    /// user's store); it is 0600, as is one of ours found wider.
    init(path: String, owner: StoreFileOwner? = nil, holder name: String? = nil) throws(StoreError) {
        let fd = try StoreLock.open(path, owner: owner)
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            throw StoreError(.permissionDenied, "cannot open lock file \(path): not a regular file")
        }
        // Nor another name of a file (a hard link the folder's owner made): it would be truncated.
        guard st.st_nlink == 1 else {
            close(fd)
            throw StoreError(
                .permissionDenied, "cannot open lock file \(path): it has \(st.st_nlink) names (hard links); remove it")
        }
        // Only its writers open it (read-only stores take no lock), and flock needs only a
        // read: a file others can open lets them hold the lock. An older version made it 0644.
        if st.st_mode & 0o077 != 0, st.st_uid == geteuid() || st.st_uid == owner?.uid {
            _ = fchmod(fd, 0o600)
        }
        var tries = 0
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let e = errno
            var buf = [UInt8](repeating: 0, count: 32)
            let n = pread(fd, &buf, 31, 0)
            let text = n > 0 ? String(decoding: buf[0..<n], as: UTF8.self).trimmingCharacters(in: " \n") : ""
            // "PID" or "PID NAME" (an older version wrote the pid alone).
            let words = text.split(separator: " ", maxSplits: 1).map(String.init)
            var holder = words.first ?? ""
            var what = words.count > 1 && words[1].allSatisfy({ $0.isLetter }) ? words[1] : nil
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
                // The file names its last writer, not the holder (a stale label, or one between
                // a new holder's flock and its write): believed only of a pid holding it now.
                let holders = StoreLock.flockHolders(st)
                if !holders.contains(where: { "\($0)" == holder }) {
                    holder = holders.first.map { "\($0)" } ?? ""
                    what = nil
                }
                var detail = [String: JSONValue]()
                if let pid = Int64(holder) { detail["pid"] = .int(pid) }
                if let what { detail["holder"] = .string(what) }
                let named = holder.isEmpty ? "" : " (pid \(holder)" + (what.map { ", \($0)" } ?? "") + ")"
                throw StoreError(.busy, "the database is held by another process" + named, detail: .object(detail))
            }
            throw StoreError(.permissionDenied, "cannot lock \(path): \(errnoDescription(e))")
        }
        let pid = "\(getpid())" + (name.map { " \($0)" } ?? "") + "\n"
        // Written over the old text, then cut to length: a reader never finds it empty.
        let written = pid.withCString { pwrite(fd, $0, strlen($0), 0) }
        if written > 0 { _ = ftruncate(fd, off_t(written)) }
        self.fd = fd
    }

    deinit { close(fd) }  // closing releases the flock

    /// The lock file, created if missing. Never through a symlink, and only a regular file:
    /// it is truncated and written.
    private static func open(_ path: String, owner: StoreFileOwner?) throws(StoreError) -> Int32 {
        let flags = O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK
        // Made and opened by name in its folder's descriptor: one that cannot be given away is
        // removed from that folder, not through whatever the path leads to by then.
        let dir = StoreFileOwner.openFolder(of: path)
        guard dir >= 0 else {
            throw StoreError(.permissionDenied, "cannot open lock file \(path): \(errnoDescription(errno))")
        }
        defer { close(dir) }
        let name = StoreFileOwner.split(path).name
        var fd: Int32 = -1
        var e: Int32 = 0
        // Created with O_EXCL, so that only a file made here is given away; one removed
        // between the two opens is created again.
        for _ in 0..<3 where fd < 0 {
            switch StoreFileOwner.create(in: dir, name, path: path, flags: flags, mode: 0o600, owner: owner) {
            case .file(let made): fd = made
            case .notGiven(let why):
                throw StoreError(
                    .permissionDenied,
                    "cannot give lock file \(path) to the database's owner (uid \(owner?.uid ?? 0)): \(errnoDescription(why))"
                )
            case .failed(let why):
                e = why
                if why == EEXIST {
                    fd = openat(dir, name, flags)
                    e = errno
                }
            }
            if fd < 0 && e != ENOENT { break }
        }
        guard fd >= 0 else {
            throw StoreError(.permissionDenied, "cannot open lock file \(path): \(errnoDescription(e))")
        }
        return fd
    }

    /// The pids /proc/locks shows holding a flock on the file `st` describes (its device as
    /// hex major:minor, and inode); none when it cannot be read. Waiters ("->") hold nothing.
    static func flockHolders(_ st: stat) -> [Int32] {
        guard let file = fopen("/proc/locks", "re") else { return [] }
        defer { fclose(file) }
        let device = UInt64(st.st_dev)
        let major = ((device >> 32) & 0xffff_f000) | ((device >> 8) & 0xfff)
        let minor = ((device >> 12) & 0xffff_ff00) | (device & 0xff)
        let id = hex2(major) + ":" + hex2(minor) + ":\(UInt64(st.st_ino))"
        var holders = [Int32]()
        var line: UnsafeMutablePointer<CChar>?
        var size = 0
        defer { free(line) }
        while getline(&line, &size, file) > 0, let text = line {
            // "N: FLOCK  ADVISORY  WRITE PID MAJ:MIN:INODE 0 EOF"
            let fields = String(cString: text).split(separator: " ")
            guard fields.count >= 6, fields[1] == "FLOCK", fields[5] == id, let pid = Int32(fields[4]) else {
                continue
            }
            holders.append(pid)
        }
        return holders
    }

    /// `n` in lower-case hex, at least two digits (the kernel's %02x).
    private static func hex2(_ n: UInt64) -> String {
        let s = String(n, radix: 16)
        return s.count < 2 ? "0" + s : s
    }

    /// Retries, 2 ms apart, while the lock is held under this process's own pid.
    static let ownRetries = 50
    /// Tests: runs with the lock file's path before each of those retries.
    static let ownPidRetried = Mutex<(@Sendable (String) -> Void)?>(nil)
}
