// Observing other threads of the test process without a clock: a thread's kernel id, and
// whether it is asleep (blocked on a lock), from /proc.

import Foundation

/// This thread's kernel id (Glibc's gettid is not visible to Swift).
public func currentThreadID() -> pid_t {
    let link = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")) ?? ""
    return pid_t(link.split(separator: "/").last.map(String.init) ?? "") ?? 0
}

/// Polls `condition` every 10 ms until it holds, for up to 60 s (a real hang); true if it held.
public func pollFor(_ condition: () -> Bool) -> Bool {
    for _ in 0..<6000 {
        if condition() { return true }
        Thread.sleep(forTimeInterval: 0.01)
    }
    return false
}

/// Waits until thread `tid` of this process is asleep (state S: blocked on a lock, once it
/// has nothing else to wait for); false after 60 s.
public func threadSleeps(_ tid: pid_t) -> Bool {
    pollFor {
        guard tid != 0, let stat = try? String(contentsOfFile: "/proc/self/task/\(tid)/stat", encoding: .utf8),
            let end = stat.lastIndex(of: ")")
        else { return false }
        return stat[end...].dropFirst(2).first == "S"
    }
}
