// The daemon's maintenance slot: one maintenance run at a time (policy runs, verify, backup,
// vacuum; the policy timer's runs included), a second answered `busy`: that is how cron runs
// never overlap. A non-admin's read-only run (a dry run, verify without repair) takes a slot
// of its uid's own, one at a time per uid, so that no user can keep cron's runs out by looping
// them, nor fill the thread pool with them (the pool takes a uid's jobs on at most half its
// threads while another's wait). One slot for all non-admins let a user pipelining `verify`
// take it again in the same pass of the loop that freed it: every other user's run was `busy`
// for ever. Loop-bound.

import ControlProtocol

final class MaintenanceSlot {
    /// The run in progress (a method name, or the policy timer's), if any.
    private(set) var running: String?
    /// Non-admins' read-only runs in progress, by principal (a uid, or a subuid range's owner).
    private(set) var readOnlyRunning: [UInt32: String] = [:]

    /// A claimed slot: end it once the run has ended.
    struct Claim {
        /// The uid whose read-only slot it is; nil for the admins' slot.
        fileprivate let readOnly: UInt32?
    }

    /// Claims the slot for `what` (the read-only one of uid `readOnly` for a non-admin's run),
    /// or tells what holds it.
    func claim(_ what: String, readOnly uid: UInt32? = nil) -> Result<Claim, Busy> {
        let holder = if let uid { readOnlyRunning[uid] } else { running }
        if let holder { return .failure(Busy(holder: holder)) }
        if let uid { readOnlyRunning[uid] = what } else { running = what }
        return .success(Claim(readOnly: uid))
    }

    /// Frees the slot `claim` took.
    func end(_ claim: Claim) {
        if let uid = claim.readOnly { readOnlyRunning[uid] = nil } else { running = nil }
    }

    /// The slot is taken by `holder`.
    struct Busy: Error {
        let holder: String

        /// The answer to a client whose run found the slot taken.
        var error: RPCError {
            .application(
                .busy, "another maintenance run is in progress: \(holder)",
                detail: .object(["running": .string(holder)]))
        }
    }
}
