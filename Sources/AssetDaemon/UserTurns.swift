// Jobs waiting by uid, taken in turn by uid: one user's many connections cannot keep another's
// jobs out, whatever order they came in. The query lane (under its lock) and the pool's client
// jobs (PoolTurns, on the loop) both wait in one of these. Not thread-safe by itself.

/// Jobs waiting, taken in turn by uid.
struct UserTurns<Job> {
    /// Jobs waiting by uid, oldest first.
    private var byUser: [UInt32: [Job]] = [:]
    /// The uids with jobs waiting, in the order they get their next turn.
    private var turns: [UInt32] = []
    /// Jobs waiting, all users'.
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }
    /// Users with jobs waiting.
    var users: Int { turns.count }

    /// Queues `job` behind `uid`'s others; a uid with none waiting takes its turn after the others'.
    mutating func append(_ job: Job, uid: UInt32) {
        if byUser[uid, default: []].isEmpty { turns.append(uid) }
        byUser[uid, default: []].append(job)
        count += 1
    }

    /// Takes the oldest job of the first uid in turn that `eligible` lets go, and puts that
    /// uid's next job behind the others' turns; nil if none may go.
    mutating func next(where eligible: (UInt32) -> Bool = { _ in true }) -> (uid: UInt32, job: Job)? {
        guard let i = turns.firstIndex(where: eligible) else { return nil }
        return take(at: i)
    }

    /// `next`, judged by the uid and its oldest job (the one that would go).
    mutating func next(whereFirst eligible: (UInt32, Job) -> Bool) -> (uid: UInt32, job: Job)? {
        guard let i = turns.firstIndex(where: { eligible($0, byUser[$0]![0]) }) else { return nil }
        return take(at: i)
    }

    private mutating func take(at i: Int) -> (uid: UInt32, job: Job) {
        let uid = turns.remove(at: i)
        var jobs = byUser.removeValue(forKey: uid)!  // a uid is in `turns` only while it has jobs
        let job = jobs.removeFirst()
        count -= 1
        if !jobs.isEmpty {
            byUser[uid] = jobs
            turns.append(uid)
        }
        return (uid, job)
    }

    /// Whether a job `matching` selects waits, any user's.
    func contains(where matching: (Job) -> Bool) -> Bool {
        byUser.values.contains { $0.contains(where: matching) }
    }

    /// Removes and returns the jobs `matching` selects, all users'.
    mutating func removeAll(matching: (Job) -> Bool) -> [Job] {
        var removed: [Job] = []
        for (uid, jobs) in byUser {
            let keep = jobs.filter { !matching($0) }
            guard keep.count != jobs.count else { continue }
            removed += jobs.filter(matching)
            byUser[uid] = keep.isEmpty ? nil : keep
            if keep.isEmpty { turns.removeAll { $0 == uid } }
        }
        count -= removed.count
        return removed
    }
}
