// stats, sweep (runs due unlinks now, retrying failed ones), pending, shutdown (admins).

import AssetStore
import ControlProtocol

extension MethodTable {
    static func stats(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        MethodOutcome(try ctx.store.statistics().json)
    }

    static func sweep(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        let report = try ctx.store.sweep(retryFailed: true)
        return MethodOutcome(
            .object([
                "unlinked": .int(Int64(report.unlinked.count)), "failed": .int(Int64(report.failed.count)),
                "skipped": .int(Int64(report.skipped.count)), "deferred": .int(Int64(report.deferred.count)),
                "pending": .int(Int64(report.pending)),
            ]), sweep: report)
    }

    static func pending(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        let limit = Int(try p.optionalInt("limit", in: 1...100_000) ?? 100)
        return MethodOutcome(.object(["pending": .array(try ctx.store.pending(limit: limit).map(\.json))]))
    }

    static func shutdown(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        MethodOutcome(.object(["stopping": true]), action: .shutdown)
    }
}
