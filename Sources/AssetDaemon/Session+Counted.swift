// A call counted against its caller's lease quota (MethodTable.countsLeases): a non-admin's
// lease under a quota, and its writes while its uid holds a lease. Such calls run on the pool
// one of a uid's at a time (LeasedTurns), a put too, out of the group commit: its count reads
// the store before it writes. Loop-bound; the question is O(1) but the quota's lookup.

import AssetStore
import ControlProtocol

extension Session {
    /// Runs `request` in its uid's turn if it is counted against its lease quota; false if it
    /// is not, and runs as its method declares.
    func runCounted(_ method: MethodTable.Method, _ request: RPCRequest, _ started: Double) -> Bool {
        // Most calls end here, without the context's copy: an admin's, or with ownership not enforced.
        if keptContext?.enforceOwnership == false || keptContext?.caller.isAdmin == true { return false }
        let turns = server.leasedTurns
        // A write without a lease of its uid, the usual put: no context copied for it either.
        if method.leaseCounting == .write, !turns.has(identity.uid),
            !daemon.store.leases.holdsLeases(uid: identity.uid)
        {
            return false
        }
        let context = server.context(for: self)
        guard MethodTable.countsLeases(method.leaseCounting, context, queued: turns.has(identity.uid)) else {
            return false
        }
        let execution: Execution = method.execution == .groupCommit ? .pool : method.execution
        runOffLoop(request, request.params, execution, context, started, counted: method.leaseCounting == .lease)
        return true
    }
}
