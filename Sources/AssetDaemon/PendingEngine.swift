// TEMPORARY stand-ins for the engine API that lands on main with "Policy engine:" and
// "Maintenance engine:"; deleted by the merge that brings them. Every call fails clearly.

import AssetStore

enum EvictionReason: String, Sendable { case budget, quota, minFree = "min_free", idle, age, evict, cascade }
struct PlannedDeletion: Sendable { var ref: ObjectRef; var reason: EvictionReason; var bytes: Int64 }
struct PolicyProgress: Sendable { var phase: String; var deleted: Int; var bytes: Int64 }
struct PolicyPlan: Sendable {
    var objects: [PlannedDeletion] = []
    var files: [String] = []
    var bytes: Int64 = 0
    var dryRun = false
    var commits: [CommitReport] = []
    var json: JSONValue = [:]
}
struct VerifyOptions { var repair = false, orphans = false, deleteOrphans = false; var failingFor = 0.0 }
struct VerifyReport { var clean = true; var commit: CommitReport?; var json: JSONValue = [:] }
struct VerifyProgress { var phase: String; var done: Int; var total: Int? }

private func notYet() -> StoreError { StoreError(.internalError, "not available in this build") }

extension Store {
    func enforce(dryRun: Bool = false, progress: (@Sendable (PolicyProgress) -> Void)? = nil) throws -> PolicyPlan { throw notYet() }
    func evict(bytes: Int64?, owner: String?, dryRun: Bool = false, progress: (@Sendable (PolicyProgress) -> Void)? = nil) throws -> PolicyPlan { throw notYet() }
    func expire(collection: String?, olderThan: Double?, idle: Double?, dryRun: Bool = false, progress: (@Sendable (PolicyProgress) -> Void)? = nil) throws -> PolicyPlan { throw notYet() }
    func verify(_ options: VerifyOptions, progress: (@Sendable (VerifyProgress) -> Void)?) throws -> VerifyReport { throw notYet() }
    func backup(to path: String, progress: (@Sendable (Int, Int) -> Void)?) throws -> JSONValue { throw notYet() }
    func vacuum() throws -> JSONValue { throw notYet() }
}
