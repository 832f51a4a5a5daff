// The `deleted` and `unlinks_queued` lists of a write's reply (object.delete, transact). A
// committed write is answered whatever its size, so a cascade through a million objects would
// build a reply of hundreds of MB: past control.max_reply_bytes each list keeps the prefix
// that fits, with its exact total and `truncated` true. A reply that fits is as it always was.

import AssetStore
import ControlProtocol

extension MethodTable {
    /// `{commit, deleted, unlinks_queued}`, plus `results` when given (transact), cut to fit
    /// `ctx.replyLimit` as the reply will be rendered (the request's id included).
    static func deletionResult(_ report: CommitReport, _ ctx: MethodContext, results: JSONValue? = nil) -> JSONValue {
        var result: [String: JSONValue] = ["commit": .int(report.commit)]
        if let results { result["results"] = results }
        let lists = DeletionLists(report)
        let cut = ctx.replyLimit == .max ? nil : lists.cut(toFit: ctx.replyLimit, around: result, id: ctx.requestID)
        guard let cut else {
            result["deleted"] = .array(report.deleted.map(\.ref.json))
            result["unlinks_queued"] = .array(report.filesQueued.map(JSONValue.string))
            return .object(result)
        }
        result["deleted"] = .array(report.deleted[..<cut.deleted].map(\.ref.json))
        result["unlinks_queued"] = .array(report.filesQueued[..<cut.unlinks].map(JSONValue.string))
        result.merge(DeletionLists.totals(report)) { _, new in new }
        return .object(result)
    }
}

/// The two lists of a deletion reply, measured as rendered.
struct DeletionLists {
    /// The commit whose `deleted` and `filesQueued` the reply lists.
    let report: CommitReport

    /// The lists of `report`.
    init(_ report: CommitReport) { self.report = report }

    /// The members a cut reply adds: the lists' totals and `truncated`.
    static func totals(_ report: CommitReport) -> [String: JSONValue] {
        [
            "deleted_total": .int(Int64(report.deleted.count)),
            "unlinks_queued_total": .int(Int64(report.filesQueued.count)), "truncated": true,
        ]
    }

    /// How many entries of each list a reply of at most `limit` bytes holds beside `others`
    /// (the result's other members), or nil if the whole lists fit.
    func cut(toFit limit: Int, around others: [String: JSONValue], id: RPCID?) -> (deleted: Int, unlinks: Int)? {
        // The envelope as rendered, and the result with empty lists.
        let envelope = RPCLine.result(id: id ?? .null, .object([:])).count - 2
        var whole = others
        whole["deleted"] = .array([])
        whole["unlinks_queued"] = .array([])
        let fixed = envelope + Self.size(.object(whole))
        // A string renders in at most 6 bytes a byte (\u00XX) and its quotes: usually the
        // bound alone says the lists fit, and nothing is measured.
        let upper =
            report.deleted.reduce(0) { $0 + 27 + 6 * ($1.ref.collection.utf8.count + $1.ref.key.utf8.count) }
            + report.filesQueued.reduce(0) { $0 + 3 + 6 * $1.utf8.count }
        if fixed + upper <= limit { return nil }
        var scratch = [UInt8]()
        let deletedSizes = report.deleted.map { Self.size($0.ref.json, &scratch) }
        let unlinkSizes = report.filesQueued.map { Self.size(.string($0), &scratch) }
        // Each entry after the first takes a comma too.
        func listSize(_ sizes: [Int]) -> Int { sizes.reduce(0, +) + max(sizes.count - 1, 0) }
        if fixed + listSize(deletedSizes) + listSize(unlinkSizes) <= limit { return nil }
        var cutResult = whole
        cutResult.merge(Self.totals(report)) { _, new in new }
        // Half the room each; what one list leaves, the other may take.
        var room = limit - envelope - Self.size(.object(cutResult))
        var deleted = 0
        var unlinks = 0
        func take(_ sizes: [Int], from start: inout Int, within budget: Int) -> Int {
            var used = 0
            while start < sizes.count, used + sizes[start] + 1 <= budget {
                used += sizes[start] + 1
                start += 1
            }
            return used
        }
        room -= take(deletedSizes, from: &deleted, within: max(room / 2, 0))
        room -= take(unlinkSizes, from: &unlinks, within: max(room, 0))
        _ = take(deletedSizes, from: &deleted, within: max(room, 0))
        return (deleted, unlinks)
    }

    private static func size(_ v: JSONValue) -> Int {
        var scratch = [UInt8]()
        return size(v, &scratch)
    }

    private static func size(_ v: JSONValue, _ scratch: inout [UInt8]) -> Int {
        scratch.removeAll(keepingCapacity: true)
        v.write(to: &scratch)
        return scratch.count
    }
}
