// object.get {collection, key, touch?} → the object or null; with touch, `accessed` moves.

import AssetStore
import ControlProtocol

extension MethodTable {
    static func objectGet(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        let ref = try p.ref()
        if try p.optionalBool("touch") == true {
            let done = try ctx.store.write(owner: ctx.caller.userName) { tx -> JSONValue in
                guard try tx.exists(ref) else { return .null }
                try checkOwner(ref, tx, ctx)
                try tx.touch(ref)
                return .null
            }
            let object = try ctx.store.read { try $0.get(ref) }
            return MethodOutcome(object?.json ?? .null, commit: done.report)
        }
        return MethodOutcome(try ctx.store.read { try $0.get(ref) }?.json ?? .null)
    }

    static func applyGet(_ p: Params, _ tx: WriteTransaction, _ ctx: MethodContext) throws -> JSONValue {
        let ref = try p.ref()
        if try p.optionalBool("touch") == true, try tx.exists(ref) {
            try checkOwner(ref, tx, ctx)
            try tx.touch(ref)
        }
        return try tx.get(ref)?.json ?? .null
    }
}
