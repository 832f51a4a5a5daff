// object.get {collection, key, touch?} → the object or null; with touch, `accessed` moves (in
// memory until the next flush of access times, Store+Access.swift; the reply shows it).
// One rendering of the reply: the daemon's loop reads through `objectGetRead` over its
// PointReader, touching or not, and the pool (an object with many file edges) and
// `assetctl --db` through the same function over the store, all printing with
// Store.renderObject.

import AssetStore
import ControlProtocol

extension MethodTable {
    static func objectGet(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        var text = [UInt8]()
        // Off the loop every file is read, and the files stop at the reply limit.
        try objectGetText(p, ctx.store, { ctx }, files: .whole(replyLimit: ctx.replyLimit), &text)
        var outcome = MethodOutcome(try text.withUnsafeBufferPointer { try JSONValue.parse($0) })
        outcome.recordedAccess = try p.optionalBool("touch") == true && outcome.result != .null
        return outcome
    }

    /// object.get on the daemon's loop: an object with many file edges throws
    /// PointReadOffLoop, to be read on the pool (`objectGet`).
    @Sendable static func objectGetRead(
        _ p: Params, _ reader: any PointReads, _ context: () -> MethodContext, _ out: inout [UInt8]
    ) throws {
        try objectGetText(p, reader, context, files: .onLoop, &out)
    }

    /// object.get: appends the object's JSON text from `reader`, or `null`; with touch, the
    /// access is recorded from the row read (a missing object is answered null, not refused).
    static func objectGetText(
        _ p: Params, _ reader: any PointReads, _ context: () -> MethodContext, files: FileReading,
        _ out: inout [UInt8]
    ) throws {
        let ref = try p.ref()
        let touch: Touching = try p.optionalBool("touch") == true ? touching(ref, context()) : .no
        if try !reader.appendObjectJSON(ref, touching: touch, files: files, to: &out) {
            out.append(contentsOf: "null".utf8)
        }
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
