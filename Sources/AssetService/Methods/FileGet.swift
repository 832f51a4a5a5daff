// file.get {path} → {file, edges, retained_by} or null: why is this file still here? Its edges
// are read one at a time in id order and bounded as they come, as edge.find's are: an answer
// that would pass control.max_reply_bytes is refused there (reply_too_large, advising edge.find
// by destination a page at a time), before the rest are read (docs/PROTOCOL.md, file.get).

import AssetStore
import ControlProtocol
import JSON

extension MethodTable {
    static func fileGet(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        let path = try p.string("path")
        // Beside its edges the reply holds the registry row (the path at worst escaped and the
        // numbers: 256 is ample) and retained_by.
        var page = EdgePage(
            limit: nil, ctx, around: 256 + JSONCursor.stringMaximum(path.utf8.count), advice: fileGetAdvice)
        let found = try ctx.store.read { r in
            // So many edges cannot fit, whatever they say: refused from the index's count, before
            // any edge is read (read one by one they held a pool thread seconds at 16 MiB).
            if let n = page.rowsToRefuse, try r.fileEdgeCount(path, atMost: n) >= n {
                throw StoreError.replyTooLarge(ctx.replyLimit, advice: fileGetAdvice)
            }
            return try r.file(path, edgeLimit: page.rowsToRefuse) { try page.add($0, $1) }
        }
        guard let record = found else { return MethodOutcome(.null) }
        let retaining = page.edges.filter { $0.rules.contains(.deleteDestinationIfAllSourcesDeleted) }.count
        return MethodOutcome(
            .object([
                "file": record.json, "edges": .array(page.edges.map(\.json)), "retained_by": .int(Int64(retaining)),
            ]))
    }

    /// How to ask for less than every edge to a file.
    static let fileGetAdvice =
        "with edge.find by destination {\"file\": path}, limit and after (a page at a time), and edge.count"
}
