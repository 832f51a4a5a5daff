// A uid's calls counted against its lease quota (MethodTable.countsLeases: its leases, and its
// writes while it holds one), one at a time: each is handed to the pool once the one before it
// is answered, durable. Counted one after the other, as the quota needs, without a pool thread
// waiting on the uid's lock: one user's many connections would have taken every thread. A
// lease first waits for the puts already in the group commit (`drain`): a put queued there
// before its uid held a lease was not counted, and must be in the store before the lease's
// count reads it. While a uid has calls here its other counted writes join them, not the
// group commit. Loop-bound.

/// Calls counted against their uid's lease quota, one of a uid's at a time.
final class LeasedTurns {
    /// Starts a call; it runs `finished` (on the loop) once answered.
    typealias Start = (_ finished: @escaping () -> Void) -> Void

    private var waiting: [UInt32: [(drains: Bool, start: Start)]] = [:]
    private var running: Set<UInt32> = []
    /// Runs its argument once every put queued for the group commit so far is answered.
    private let drain: (@escaping () -> Void) -> Void

    init(drain: @escaping (@escaping () -> Void) -> Void) {
        self.drain = drain
    }

    /// Whether `uid` has a call here, waiting or running: its counted writes must join it.
    func has(_ uid: UInt32) -> Bool {
        running.contains(uid)
    }

    /// Runs `start` once `uid`'s calls before it are answered (and, if it `drains`, the puts
    /// queued for the group commit before it).
    func submit(uid: UInt32, drains: Bool, _ start: @escaping Start) {
        waiting[uid, default: []].append((drains, start))
        if !running.contains(uid) { next(uid) }
    }

    private func next(_ uid: UInt32) {
        guard var calls = waiting.removeValue(forKey: uid) else {
            running.remove(uid)
            return
        }
        let call = calls.removeFirst()
        if !calls.isEmpty { waiting[uid] = calls }
        running.insert(uid)
        let finished = { [unowned self] in next(uid) }
        if call.drains {
            drain { call.start(finished) }
        } else {
            call.start(finished)
        }
    }
}
