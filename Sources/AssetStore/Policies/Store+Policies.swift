// The store's policy entry points: `enforce` (the configured policies in their order), and
// `evict` and `expire` (explicit requests). Each builds the steps of one PolicyRun; a real
// run that cannot commit its first batch on a full disk starts again once the reserve is out.

import GRDB

extension Store {
    /// Applies the configured `[policy]`: TTLs, then quotas, then the byte budget, then
    /// `min_free`. With no policy configured, nothing happens.
    /// On a full disk a real run may use the reserve (Store+Reserve.swift): when its first batch
    /// cannot commit, the run starts again once the reserve is released. So may `evict` and `expire`.
    /// `dryRunBatches`: a dry run plans at most this many batches and then says `truncated`
    /// (it holds the writer for the whole plan: a caller that is not trusted gets one batch).
    public func enforce(
        dryRun: Bool = false, dryRunBatches: Int? = nil, progress: (@Sendable (PolicyProgress) -> Void)? = nil
    ) throws -> PolicyPlan {
        if !dryRun, let paused = pausedByRestore() { return paused }
        return try freeingSpace(dryRun ? nil : "a policy run") {
            try enforceOnce(dryRun: dryRun, dryRunBatches: dryRunBatches, progress: progress)
        }
    }

    /// While a restore holds the copy's queued unlinks, a real run deletes nothing: an object of
    /// the copy it would delete may hold a file a put lost by the restore took again, and its
    /// row would be queued past the hold (Store+Restore.swift; assetctl(1), restore).
    func pausedByRestore() -> PolicyPlan? {
        guard state.withLock({ $0.restoreHold?.queueThrough }) != nil else { return nil }
        var plan = PolicyPlan(dryRun: false)
        plan.heldByRestore = true
        return plan
    }

    private func enforceOnce(
        dryRun: Bool, dryRunBatches: Int?, progress: (@Sendable (PolicyProgress) -> Void)?
    ) throws -> PolicyPlan {
        guard let policy else { return PolicyPlan(dryRun: dryRun) }
        let run = PolicyRun(
            store: self, policy: policy, dryRun: dryRun, dryRunBatches: dryRunBatches, progress: progress)
        var steps = [PolicyStep]()
        for ttl in policy.ttls {
            if let idle = ttl.maxIdle { steps.append(ExpireStep(run, collection: ttl.collection, idle: idle)) }
            if let age = ttl.maxAge { steps.append(ExpireStep(run, collection: ttl.collection, age: age)) }
        }
        if !policy.quotas.isEmpty { steps.append(QuotaStep(policy.quotas)) }
        if let max = policy.maxBytes {
            // Near Int64.max the share rounds up past what an Int64 holds (and would trap).
            let share = Double(max) * policy.lowWater
            steps.append(BudgetStep(max: max, target: share < Double(Int64.max) ? Int64(share) : max))
        }
        if let minFree = policy.minFree {
            // Files recorded before a filesystem was numbered anew are on it too (DeviceRenumbering.swift),
            // and it may have been since the last sweep read the numbers (mounted again).
            try refreshRootDevices(recording: !dryRun)
            let renumbered = state.withLock { $0.renumbered.anyRoot }
            for device in roots.devices() {
                let earlier = renumbered.filter { $0.value == device }.map(\.key).sorted()
                steps.append(MinFreeStep(device: device, earlier: earlier, minFree: minFree))
            }
        }
        return try run.run(steps)
    }

    /// Evicts objects until at least `bytes` will be freed: owners over quota first, then in
    /// the configured order (of `owner`, least recently accessed first); without `bytes`,
    /// every evictable object of `owner`.
    public func evict(
        bytes: Int64?, owner: String?, dryRun: Bool = false, dryRunBatches: Int? = nil,
        progress: (@Sendable (PolicyProgress) -> Void)? = nil
    ) throws -> PolicyPlan {
        guard bytes != nil || owner != nil else { throw StoreError(.invalidParams, "evict needs bytes, owner or both") }
        if let bytes, bytes <= 0 { throw StoreError(.invalidParams, "bytes must be positive") }
        if !dryRun, let paused = pausedByRestore() { return paused }
        return try freeingSpace(dryRun ? nil : "an eviction") {
            try evictOnce(bytes: bytes, owner: owner, dryRun: dryRun, dryRunBatches: dryRunBatches, progress: progress)
        }
    }

    private func evictOnce(
        bytes: Int64?, owner: String?, dryRun: Bool, dryRunBatches: Int?,
        progress: (@Sendable (PolicyProgress) -> Void)?
    ) throws -> PolicyPlan {
        // Without a [policy] no access is counted for another order: least recently accessed first.
        let policy =
            self.policy
            ?? {
                var p = PolicyConfiguration()
                p.order = .lru
                return p
            }()
        let run = PolicyRun(
            store: self, policy: policy, dryRun: dryRun, dryRunBatches: dryRunBatches, progress: progress)
        // Owners furthest over quota lose bytes first, as in every eviction (assetd(8), DATA MODEL).
        var steps: [PolicyStep] = []
        if owner == nil, let bytes, !policy.quotas.isEmpty {
            steps.append(QuotaStep(policy.quotas, stopAt: bytes, reason: .evict))
        }
        return try run.run(steps + [EvictStep(bytes: bytes, owner: owner)])
    }

    /// Expires objects (of `collection`, or all) created more than `olderThan` seconds ago or
    /// not accessed for `idle` seconds; with neither, applies the configured TTLs.
    public func expire(
        collection: String?, olderThan: Double?, idle: Double?, dryRun: Bool = false, dryRunBatches: Int? = nil,
        progress: (@Sendable (PolicyProgress) -> Void)? = nil
    ) throws -> PolicyPlan {
        if !dryRun, let paused = pausedByRestore() { return paused }
        return try freeingSpace(dryRun ? nil : "an expiry") {
            try expireOnce(
                collection: collection, olderThan: olderThan, idle: idle, dryRun: dryRun, dryRunBatches: dryRunBatches,
                progress: progress)
        }
    }

    private func expireOnce(
        collection: String?, olderThan: Double?, idle: Double?, dryRun: Bool, dryRunBatches: Int?,
        progress: (@Sendable (PolicyProgress) -> Void)?
    ) throws -> PolicyPlan {
        let policy = self.policy ?? PolicyConfiguration()
        let run = PolicyRun(
            store: self, policy: policy, dryRun: dryRun, dryRunBatches: dryRunBatches, progress: progress)
        var steps = [PolicyStep]()
        for d in [olderThan, idle] {
            if let d, !(d >= 0) { throw StoreError(.invalidParams, "durations must not be negative") }
        }
        if olderThan == nil && idle == nil {
            // By bytes, as SQLite tells collections apart: String's == would run a look-alike
            // collection's TTL (`cafe` + U+0301 for `café`) on objects the caller did not name.
            let ttls = policy.ttls.filter { t in collection.map { UTF8Key.same(t.collection, $0) } ?? true }
            guard !ttls.isEmpty else {
                throw StoreError(
                    .invalidParams,
                    "no ttl is configured\(collection.map { " for \($0)" } ?? ""): give older_than or idle")
            }
            for ttl in ttls {
                if let idle = ttl.maxIdle { steps.append(ExpireStep(run, collection: ttl.collection, idle: idle)) }
                if let age = ttl.maxAge { steps.append(ExpireStep(run, collection: ttl.collection, age: age)) }
            }
        } else {
            if let idle { steps.append(ExpireStep(run, collection: collection, idle: idle)) }
            if let olderThan { steps.append(ExpireStep(run, collection: collection, age: olderThan)) }
        }
        return try run.run(steps)
    }
}
