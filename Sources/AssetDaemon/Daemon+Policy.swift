// The policy timer (assetd(8), DATA MODEL, Lifecycle policies): every policy.interval, while
// `[policy]` is configured, one `store.enforce()` on the thread pool, never overlapping
// itself or a client's maintenance run; then events for what each batch committed, and a
// sweep for the files it queued.

import AssetStore
import EventLoop

extension Daemon {
    /// What the timer's runs are called in `busy` answers and the log.
    static let policyTimerRun = "policy.enforce (the policy timer)"

    /// (Re)starts the timer for the current `[policy]`, or stops it when there is none.
    func startPolicyTimer() throws(UVError) {
        guard let policy = config.policy, !stopping else {
            policyTimer?.close()
            policyTimer = nil
            return
        }
        let timer: EventLoop.Timer
        if let existing = policyTimer {
            timer = existing
        } else {
            timer = try EventLoop.Timer(loop: loop)
            policyTimer = timer
        }
        try timer.start(after: policy.interval, repeating: policy.interval) { [unowned self] in enforcePolicy() }
    }

    /// One enforcement run, unless another maintenance run holds the slot (or a failed sync
    /// stopped writes: it could only fail).
    func enforcePolicy() {
        guard !stopping, store.syncFailure == nil else { return }
        let claim: MaintenanceSlot.Claim
        switch maintenance.claim(Daemon.policyTimerRun) {
        case .success(let c): claim = c
        case .failure(let busy):
            logger.info("policy run skipped: \(busy.holder) is in progress")
            return
        }
        let box = Box<Result<PolicyPlan, any Error>>()
        let store = self.store!
        do {
            try submit({ box.value = Result { try store.enforce() } }) { [unowned self] in
                maintenance.end(claim)
                switch box.value {
                case .success(let plan)? where plan.heldByRestore:
                    logger.notice(
                        "policy run skipped: a restore's hold lasts until `assetctl sweep --release-restore`")
                case .success(let plan)?:
                    logChanges(
                        of: Daemon.policyTimerRun, plan.commits, bytes: plan.bytes)
                    logOversized(of: Daemon.policyTimerRun, plan)
                    for report in plan.commits {
                        noteCommit(report.commit)
                        server.broadcast(.commit(report))
                    }
                    sweptAlongside(plan)
                    if plan.commits.contains(where: { !$0.filesQueued.isEmpty }) { scheduleSweep() }
                case .failure(let failure as PolicyRunFailure)?:
                    // The batches before the failure stand: their events and unlinks go on.
                    logger.error(
                        "policy run failed after \(failure.completed.objects.count) objects: \(failure.underlying)")
                    for report in failure.completed.commits {
                        noteCommit(report.commit)
                        server.broadcast(.commit(report))
                    }
                    sweptAlongside(failure.completed)
                    scheduleSweep()
                case .failure(let e)?:
                    logger.error("policy run failed: \(e)")
                case nil:
                    break
                }
                logMinFreeCaps()
            }
        } catch {
            maintenance.end(claim)
            logger.error("cannot schedule a policy run: \(error)")
        }
    }

    /// Logs at info what a maintenance run (the timer's, or a client's such as `assetctl
    /// enforce`) changed, so an admin reading the log learns why objects and files went;
    /// a run that committed nothing (a dry run, a clean verify) logs nothing.
    func logChanges(of run: String, _ commits: [CommitReport], bytes: Int64? = nil) {
        guard let first = commits.first, let last = commits.last else { return }
        func count(_ n: Int, _ noun: String) -> String { "\(n) \(noun)\(n == 1 ? "" : "s")" }
        let objects = commits.reduce(0) { $0 + $1.deleted.count }
        let files = commits.reduce(0) { $0 + $1.filesQueued.count }
        var line = "\(run): "
        if objects == 0 && files == 0 {
            line += "changed the store"  // a repair, an index definition
        } else {
            line += "deleted \(count(objects, "object")), queued \(count(files, "file")) for unlinking"
            if let bytes { line += " (\(count(Int(bytes), "byte")))" }
        }
        line += first.commit == last.commit ? ", commit \(first.commit)" : ", commits \(first.commit)-\(last.commit)"
        logger.info("\(line)")
    }

    /// Warns of deletions whose rules reached more than a batch's work budget: each held the
    /// writer for longer than a batch should (assetd(8), POLICIES).
    func logOversized(of run: String, _ plan: PolicyPlan) {
        guard plan.oversized > 0, let first = plan.firstOversized else { return }
        let n = plan.oversized
        let line =
            "\(run): \(n) deletion\(n == 1 ? "" : "s") reached more than a batch's work budget"
            + " and went whole, the first \(String(reflecting: "\(first.collection)/\(first.key)"))"
        logger.warning("\(line)")
    }

    /// Warns once when a run (the timer's or a client's) caps a `min_free` out of reach, and
    /// says once when one lifts (at info: nothing is wrong then): not at every run that keeps it.
    func logMinFreeCaps() {
        for change in store.takeMinFreeCapChanges() {
            switch change {
            case .engaged(let c):
                logger.warning(
                    """
                    policy.min_free = \(c.minFree) cannot be met on the file system of \(c.root): at most \(c.reachable) \
                    bytes could be free with every file assetd holds there evicted; the floor is capped at the \(c.cap) \
                    bytes free now, so the cache evicts what it adds but not what other programs took: \
                    free space outside the cache, or lower policy.min_free
                    """)
            case .lifted(let c, let reachable):
                logger.info(
                    """
                    policy.min_free = \(c.minFree) can be met again on the file system of \(c.root) (\(reachable) bytes \
                    free or held by assetd there): its cap at \(c.cap) bytes is lifted
                    """)
            case .dropped(let c):
                logger.info("policy.min_free changed: its cap at \(c.cap) bytes on \(c.root) is dropped")
            }
        }
    }

    /// Events and log lines for the files a run unlinked beside its batches, as a sweep's.
    private func sweptAlongside(_ plan: PolicyPlan) {
        if let report = plan.sweep { reportSweep(report) }
    }

    /// Log lines and events for what a sweep did: the daemon's own, or one beside a policy
    /// run's batches (the timer's, or a client's `policy.*`).
    func reportSweep(_ report: SweepReport) {
        for f in report.failed { logger.warning("unlink failed: \(f.path): \(f.error) (attempt \(f.attempts))") }
        let notTaken = Dictionary(report.lookNotTaken, uniquingKeysWith: { a, _ in a })
        for s in report.skipped {
            let why = notTaken[s.path].map { " (\($0))" } ?? ""
            logger.warning("unlink skipped: \(s.path): \(s.reason.rawValue)\(why)")
        }
        for d in report.deferred { logger.debug("unlink deferred: \(d.path): \(d.reason.rawValue)") }
        if !report.unlinked.isEmpty { logger.debug("unlinked \(report.unlinked.count) files") }
        server.broadcast(.sweep(report, commit: lastCommit))
    }
}
