// The daemon's maintenance slot: one maintenance run at a time (policy runs, verify, backup,
// vacuum; the policy timer's runs included), a second answered `busy`: that is how cron runs
// never overlap. A non-admin's read-only run (a dry run, verify without repair) takes a slot
// of its principal's own (a uid, or a subuid range's first: assetd(8), Access), one at a time
// per principal, so that no user can keep cron's runs out by looping them. One slot for all
// non-admins let a user pipelining `verify` take it again in the same pass of the loop that
// freed it: every other user's run was `busy` for ever. Those slots are bounded together too,
// at half the pool's threads: K users' verifies are each a long pool job and K dry runs each
// hold the writer a batch at a time, so K of them at once filled the pool and made every put
// wait K batches (the pool bounds one uid's jobs, not many uids'). A slot freed at that total
// goes first to the users refused at it (for a while), for the same reason. Loop-bound.

import ControlProtocol
import Foundation
import JSON

final class MaintenanceSlot {
    /// The run in progress (a method name, or the policy timer's), if any.
    private(set) var running: String?
    /// Non-admins' read-only runs in progress, by principal.
    private(set) var readOnlyRunning: [UInt32: String] = [:]
    /// How many non-admins' read-only runs may be in progress at once, of all principals.
    let readOnlyTotal: Int
    /// The principals refused at the total, with when they last were: while any waits, a slot
    /// freed goes only to one of them, or a user looping `verify` would take it again in the
    /// pass of the loop that freed it and every other user be `busy` for ever. Forgotten after
    /// `patience` seconds, so that one that asked once and left keeps no slot idle; bounded.
    private var waiting: [UInt32: Double] = [:]
    static let patience = 10.0
    static let maximumWaiting = 4096
    private let now: () -> Double

    init(readOnlyTotal: Int, now: @escaping () -> Double = { ProcessInfo.processInfo.systemUptime }) {
        self.readOnlyTotal = max(1, readOnlyTotal)
        self.now = now
    }

    /// A claimed slot: end it once the run has ended.
    struct Claim {
        /// The principal whose read-only slot it is; nil for the admins' slot.
        fileprivate let readOnly: UInt32?
    }

    /// Claims the slot for `what` (the read-only one of principal `readOnly` for a non-admin's
    /// run), or tells what holds it (a read-only run past the total: the runs in progress).
    func claim(_ what: String, readOnly principal: UInt32? = nil) -> Result<Claim, Busy> {
        let holder = if let principal { readOnlyRunning[principal] } else { running }
        if let holder { return .failure(Busy(holder: holder)) }
        if let principal, readOnlyRunning.count >= readOnlyTotal {
            if waiting[principal] != nil || waiting.count < Self.maximumWaiting { waiting[principal] = now() }
            let holder = "\(readOnlyRunning.count) read-only runs of other users"
            return .failure(Busy(holder: holder, total: readOnlyTotal))
        }
        if let principal, !waiting.isEmpty {
            let t = now()
            waiting = waiting.filter { t - $0.value < Self.patience }
            if !waiting.isEmpty, waiting.removeValue(forKey: principal) == nil {
                let holder = "\(readOnlyRunning.count) read-only runs of other users, the next for users refused before"
                return .failure(Busy(holder: holder, total: readOnlyTotal))
            }
        }
        if let principal { readOnlyRunning[principal] = what } else { running = what }
        return .success(Claim(readOnly: principal))
    }

    /// Frees the slot `claim` took.
    func end(_ claim: Claim) {
        if let principal = claim.readOnly { readOnlyRunning[principal] = nil } else { running = nil }
    }

    /// The slot is taken by `holder`.
    struct Busy: Error {
        let holder: String
        /// Set when the read-only runs of all users are at their total.
        var total: Int? = nil

        /// The answer to a client whose run found the slot taken.
        var error: RPCError {
            var detail: [String: JSONValue] = ["running": .string(holder)]
            if let total { detail["read_only_total"] = .int(Int64(total)) }
            return .application(
                .busy, "another maintenance run is in progress: \(holder)", detail: .object(detail))
        }
    }
}
