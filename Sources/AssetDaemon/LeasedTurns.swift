// A uid's calls counted against its lease quota (MethodTable.countsLeases: its leases, and its
// writes while it holds one), one at a time: each is handed to the pool once the one before it
// is answered, durable. Counted one after the other, as the quota needs, without a pool thread
// waiting on the uid's lock: one user's many connections would have taken every thread. A lease
// first waits for the uid's writes already under way uncounted: its puts in the group commit
// (`drain`; not other uids', which a batch may defer batch after batch), and the edge.add or
// transact on the pool (`writeStarted`), each queued before its uid held a lease, must be in
// the store before the lease's count reads it. While a uid has calls here its other counted
// writes join them, not the group commit. A call not yet started is dropped when its connection
// closes, or at a stop (its `drop` answers it). Loop-bound.

/// Calls counted against their uid's lease quota, one of a uid's at a time.
final class LeasedTurns {
    /// Starts a call; it runs `finished` (on the loop) once answered.
    typealias Start = (_ finished: @escaping () -> Void) -> Void

    private struct Call {
        let connection: UInt64
        let drains: Bool
        let start: Start
        /// Run instead of `start` for a call dropped unstarted.
        let drop: () -> Void
    }

    private var waiting: [UInt32: [Call]] = [:]
    private var running: Set<UInt32> = []
    /// A uid's writes running uncounted on the pool, and the leases waiting for them to end.
    private var writes: [UInt32: (count: Int, then: [() -> Void])] = [:]
    /// Calls waiting their turn (for a test).
    var waitingCount: Int { waiting.values.reduce(0) { $0 + $1.count } }
    /// Calls taken from `waiting` that wait for the drain and the uid's writes (for a test).
    private(set) var draining = 0
    /// Runs its argument once every put of the uid queued for the group commit so far is
    /// answered (not other uids': a batch may defer theirs, batch after batch).
    private let drain: (_ uid: UInt32, _ then: @escaping () -> Void) -> Void
    /// Whether the daemon stops: a call not started then is dropped.
    private let stopping: () -> Bool

    init(
        drain: @escaping (_ uid: UInt32, _ then: @escaping () -> Void) -> Void,
        stopping: @escaping () -> Bool = { false }
    ) {
        (self.drain, self.stopping) = (drain, stopping)
    }

    /// Whether `uid` has a call here, waiting or running: its counted writes must join it.
    func has(_ uid: UInt32) -> Bool {
        running.contains(uid)
    }

    /// Runs `start` once `uid`'s calls before it are answered (and, if it `drains`, the uid's
    /// puts queued for the group commit before it and its uncounted writes), or `drop` if
    /// connection `connection` closes or the daemon stops before then.
    func submit(uid: UInt32, connection: UInt64, drains: Bool, _ start: @escaping Start, drop: @escaping () -> Void) {
        waiting[uid, default: []].append(Call(connection: connection, drains: drains, start: start, drop: drop))
        if !running.contains(uid) { next(uid) }
    }

    /// Drops the calls of connection `connection` (closed) not started yet.
    func drop(connection: UInt64) {
        for (uid, calls) in waiting where calls.contains(where: { $0.connection == connection }) {
            waiting[uid] = calls.filter { $0.connection != connection }
            if waiting[uid]!.isEmpty { waiting[uid] = nil }
            for call in calls where call.connection == connection { call.drop() }
        }
    }

    /// A write of `uid` goes to the pool uncounted: a lease of that uid waits for its end.
    func writeStarted(_ uid: UInt32) {
        writes[uid, default: (0, [])].count += 1
    }

    /// The write `writeStarted` told of is answered.
    func writeEnded(_ uid: UInt32) {
        guard var w = writes[uid] else { return }
        w.count -= 1
        if w.count > 0 {
            writes[uid] = w
            return
        }
        writes[uid] = nil
        for then in w.then { then() }
    }

    private func afterWrites(_ uid: UInt32, _ then: @escaping () -> Void) {
        if writes[uid] == nil { then() } else { writes[uid]!.then.append(then) }
    }

    private func next(_ uid: UInt32) {
        while var calls = waiting.removeValue(forKey: uid) {
            let call = calls.removeFirst()
            if !calls.isEmpty { waiting[uid] = calls }
            if stopping() {
                call.drop()
                continue
            }
            running.insert(uid)
            let finished = { [unowned self] in next(uid) }
            if call.drains {
                draining += 1
                drain(uid) { [unowned self] in
                    afterWrites(uid) { [unowned self] in
                        draining -= 1
                        call.start(finished)
                    }
                }
            } else {
                call.start(finished)
            }
            return
        }
        running.remove(uid)
    }
}
