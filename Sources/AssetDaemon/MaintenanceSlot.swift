// The daemon's maintenance slot: one maintenance run at a time (policy runs, verify, backup,
// vacuum; the policy timer's runs included), a second answered `busy`: that is how cron runs
// never overlap. A non-admin's read-only run (a dry run, verify without repair) takes a slot
// of its own, also one at a time, so that no user can keep cron's runs out by looping them,
// nor fill the thread pool with them. Loop-bound.

import ControlProtocol

final class MaintenanceSlot {
    /// The run in progress (a method name, or the policy timer's), if any.
    private(set) var running: String?
    /// A non-admin's read-only run in progress, if any.
    private(set) var readOnlyRunning: String?

    /// A claimed slot: end it once the run has ended.
    struct Claim {
        fileprivate let readOnly: Bool
    }

    /// Claims the slot for `what` (the read-only one for a non-admin's run), or tells what
    /// holds it.
    func claim(_ what: String, readOnly: Bool = false) -> Result<Claim, Busy> {
        if let holder = readOnly ? readOnlyRunning : running { return .failure(Busy(holder: holder)) }
        if readOnly { readOnlyRunning = what } else { running = what }
        return .success(Claim(readOnly: readOnly))
    }

    /// Frees the slot `claim` took.
    func end(_ claim: Claim) {
        if claim.readOnly { readOnlyRunning = nil } else { running = nil }
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
