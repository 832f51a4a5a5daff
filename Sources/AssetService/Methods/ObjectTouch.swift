// object.touch {collection, key} → {commit}: sets `accessed` (drives LRU).

import AssetStore
import ControlProtocol

extension MethodTable {
    static func objectTouch(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        committed(try ctx.store.write(owner: ctx.caller.userName) { tx in _ = try applyTouch(p, tx, ctx) }.report)
    }

    static func applyTouch(_ p: Params, _ tx: WriteTransaction, _ ctx: MethodContext) throws -> JSONValue {
        let ref = try p.ref()
        try checkOwner(ref, tx, ctx)
        try tx.touch(ref)
        return .object([:])
    }
}
