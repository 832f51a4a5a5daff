// watch {collections?, types?} → {watching} and unwatch: events follow as notifications on
// this connection (assetd(8), CONTROL PROTOCOL, Methods and Events).

import AssetStore
import ControlProtocol

extension MethodTable {
    /// The event types a watcher may ask for.
    public static let eventTypes: Set<String> = [
        "object.put", "object.deleted", "edge.deleted", "file.queued", "file.unlinked", "file.unlink_failed",
        "file.unlink_skipped",
    ]

    static func watch(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        let collections = try p.optionalStrings("collections").map { Set($0.map { UTF8Key($0) }) }
        let types = try p.optionalStrings("types").map(Set.init)
        if let types, let bad = types.subtracting(eventTypes).sorted().first {
            throw RPCError.invalidParams("unknown event type \(bad)")
        }
        return MethodOutcome(
            .object(["watching": true]), action: .watch(EventFilter(collections: collections, types: types)))
    }

    static func unwatch(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        MethodOutcome(.object(["watching": false]), action: .unwatch)
    }
}
