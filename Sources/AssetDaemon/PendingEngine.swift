// TEMPORARY stand-ins for the engine API that lands on main with "Maintenance engine:";
// deleted by the merge that brings it. Every call fails clearly.

import AssetStore

struct VerifyOptions { var repair = false, orphans = false, deleteOrphans = false; var failingFor = 0.0 }
struct VerifyReport { var clean = true; var commit: CommitReport?; var json: JSONValue = [:] }
struct VerifyProgress { var phase: String; var done: Int; var total: Int? }

private func notYet() -> StoreError { StoreError(.internalError, "not available in this build") }

extension Store {
    func verify(_ options: VerifyOptions, progress: (@Sendable (VerifyProgress) -> Void)?) throws -> VerifyReport { throw notYet() }
    func backup(to path: String, progress: (@Sendable (Int, Int) -> Void)?) throws -> JSONValue { throw notYet() }
    func vacuum() throws -> JSONValue { throw notYet() }
}
