// object.get {collection, key, touch?} → the object or null; with touch, `accessed` moves (in
// memory until the next flush of access times, Store+Access.swift; the reply shows it).
// One rendering of the reply: the daemon's loop reads through `objectGetRead` over its
// PointReader, and every other get (with touch, in-process) through the same function over
// the store, both printing with Store.renderObject.

import AssetStore
import ControlProtocol

extension MethodTable {
    static func objectGet(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        let ref = try p.ref()
        var recorded = false
        if try p.optionalBool("touch") == true {
            // In memory (Store+Access.swift); a missing object is answered null below.
            do {
                try recordTouch(ref, ctx)
                recorded = true
            } catch let e as StoreError where e.code == .notFound {}
        }
        let text = try objectGetRead(p, ctx.store.objectJSON)
        var outcome = MethodOutcome(try text.withUnsafeBufferPointer { try JSONValue.parse($0) })
        outcome.recordedAccess = recorded
        return outcome
    }

    /// object.get without touch: the object's JSON text from `reader`, or `null`.
    @Sendable static func objectGetRead(_ p: Params, _ reader: ObjectReader) throws -> [UInt8] {
        try reader(try p.ref()) ?? Array("null".utf8)
    }

    /// Whether a get writes (moves `accessed`): anything but an absent or false `touch`, so
    /// that a malformed one is refused by the body.
    @Sendable static func objectGetTouches(_ params: JSONValue) -> Bool {
        params["touch"] != nil && params["touch"] != false
    }

    static func applyGet(_ p: Params, _ tx: WriteTransaction, _ ctx: MethodContext) throws -> JSONValue {
        let ref = try p.ref()
        if try p.optionalBool("touch") == true, try tx.exists(ref) {
            try checkOwner(ref, tx, ctx)
            try tx.touch(ref, refreshingFiles: false)
        }
        return try tx.get(ref)?.json ?? .null
    }
}
