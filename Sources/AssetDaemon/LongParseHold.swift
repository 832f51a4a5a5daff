// Debug builds only, for a test of a running assetd: holds start-up (StartHold), or the
// thread that parsed a long ping line (other methods pass, to show they are not held up),
// once its params are built,
// while the file ASSETD_DEBUG_HOLD_LONG_PARSE names exists, having made "FILE.held" and
// "FILE.held-N" (the Nth held) to say it got there; "FILE.release-N" lets the Nth go alone.
// Release builds have none of this.

#if DEBUG
import Glibc
import Synchronization

enum LongParseHold {
    static let file = getenv("ASSETD_DEBUG_HOLD_LONG_PARSE").map { String(cString: $0) }
    /// Parses held so far.
    private static let held = Atomic<Int>(0)

    /// Returns at once unless the hold file exists; then waits until it is removed.
    static func wait() {
        guard let file, access(file, F_OK) == 0 else { return }
        let n = held.add(1, ordering: .relaxed).newValue
        close(open(file + ".held", O_CREAT | O_WRONLY | O_CLOEXEC, 0o600))
        close(open(file + ".held-\(n)", O_CREAT | O_WRONLY | O_CLOEXEC, 0o600))
        let release = file + ".release-\(n)"
        while access(file, F_OK) == 0, access(release, F_OK) != 0 { usleep(1000) }
    }
}

/// Start-up held before the store opens while the file ASSETD_DEBUG_HOLD_START names exists,
/// having written its pid to "FILE.held".
enum StartHold {
    static func wait() {
        guard let file = getenv("ASSETD_DEBUG_HOLD_START").map({ String(cString: $0) }), access(file, F_OK) == 0
        else { return }
        let fd = open(file + ".held.tmp", O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0o600)
        let pid = Array("\(getpid())".utf8)
        _ = pid.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        rename(file + ".held.tmp", file + ".held")
        while access(file, F_OK) == 0 { usleep(1000) }
    }
}

/// The same for `object.list`, `edge.add`, `object.get` and `verify` (run on the pool; `stats` too,
/// and a test reads it meanwhile), held before it runs while the file
/// ASSETD_DEBUG_HOLD_POOL_JOB names exists: its request, parsed, is held meanwhile.
enum PoolJobHold {
    static let file = getenv("ASSETD_DEBUG_HOLD_POOL_JOB").map { String(cString: $0) }

    static func wait() {
        guard let file, access(file, F_OK) == 0 else { return }
        close(open(file + ".held", O_CREAT | O_WRONLY | O_CLOEXEC, 0o600))
        while access(file, F_OK) == 0 { usleep(1000) }
    }
}

/// The same for the group commit's committer, before it takes a batch, while the file
/// ASSETD_DEBUG_HOLD_COMMIT names exists: the puts queued stay unanswered meanwhile.
enum CommitHold {
    static let file = getenv("ASSETD_DEBUG_HOLD_COMMIT").map { String(cString: $0) }

    static func wait() {
        guard let file, access(file, F_OK) == 0 else { return }
        close(open(file + ".held", O_CREAT | O_WRONLY | O_CLOEXEC, 0o600))
        while access(file, F_OK) == 0 { usleep(1000) }
    }
}
#endif
