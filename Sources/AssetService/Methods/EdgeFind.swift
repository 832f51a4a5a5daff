// edge.find {name?, source?, destination?, after?, limit?} → {edges, next?} / edge.count {…} →
// {count}. Edges are read one at a time in id order and their size bounded as they come: an
// answer that would pass control.max_reply_bytes stops there, before a store of millions of
// edges is made into memory whole. With `limit` the reply pages (`next` is the `after` of the next).

import AssetStore
import ControlProtocol
import JSON

extension MethodTable {
    static func edgeFind(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        let (filter, after, page) = try edgeFindParams(p, ctx)
        var reply = page
        try ctx.store.read { r in try r.edges(filter, after: after, limit: page.rows) { try reply.add($0, $1) } }
        return MethodOutcome(reply.result)
    }

    static func edgeCount(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        let filter = try edgeFilter(p)
        return MethodOutcome(.object(["count": .int(Int64(try ctx.store.read { try $0.edgeCount(filter) }))]))
    }

    /// In a transaction a reply past the limit throws there, so the transaction rolls back.
    static func applyEdgeFind(_ p: Params, _ tx: WriteTransaction, _ ctx: MethodContext) throws -> JSONValue {
        let (filter, after, page) = try edgeFindParams(p, ctx)
        var reply = page
        try tx.edges(filter, after: after, limit: page.rows) { try reply.add($0, $1) }
        return reply.result
    }

    static func applyEdgeCount(_ p: Params, _ tx: WriteTransaction, _ ctx: MethodContext) throws -> JSONValue {
        .object(["count": .int(Int64(try tx.edgeCount(try edgeFilter(p))))])
    }

    static func edgeFilter(_ p: Params) throws -> EdgeFilter {
        EdgeFilter(
            name: try p.optionalString("name"), source: p.value("source") == nil ? nil : try p.ref("source"),
            destination: try p.optionalEnd("destination"))
    }

    private static func edgeFindParams(_ p: Params, _ ctx: MethodContext) throws -> (EdgeFilter, Int64, EdgePage) {
        let filter = try edgeFilter(p)
        let after = try p.optionalInt("after") ?? 0
        let limit = try p.optionalInt("limit", in: 1...100_000).map(Int.init)
        return (filter, after, EdgePage(limit: limit, ctx))
    }
}

/// edge.find's reply, filled an edge at a time as the store reads them.
struct EdgePage {
    /// The page size asked for; nil for every matching edge.
    let limit: Int?
    /// What the page may take: control.max_reply_bytes, less what a transact's results
    /// before it take. Without `limit` the whole limit: no page can end early, and an answer
    /// that fits a reply alone is then refused as the transact's results (read less in one
    /// transact), not with advice to page.
    let replyLimit: Int
    /// control.max_reply_bytes.
    private let wholeLimit: Int
    /// What the reply takes so far: a bound, until the bound passes the limit, then as rendered.
    private(set) var bytes: Int
    /// Whether `bytes` is as rendered: a page of a few thousand edges is never rendered twice.
    private(set) var measured = false
    /// What the reply takes beside its edges.
    private let base: Int
    /// Kept as edges, not JSON, until the read ends: a JSON object takes several times its
    /// rendered size, and a refused answer then held that much before the refusal.
    private(set) var edges = [Edge]()
    /// The id of the last edge taken: the next page's `after`.
    private(set) var last: Int64?
    /// Whether an edge after the last one taken matched.
    private(set) var more = false
    /// Edges the store has handed over, the one that ended the read included.
    private(set) var read = 0

    /// How to ask for less, in the refusal.
    static let advice = "with edge.find limit and after (a page at a time, the reply's next the after of the next)"
    /// How to ask for less in this reply's refusal.
    private let tooLargeAdvice: String

    /// Fewer bytes than any edge's text takes in a reply (101 at least: every member of a
    /// manual edge, each as short as it gets), so a limit of rows made from it never cuts an
    /// answer that fits.
    static let edgeTextMinimum = 64

    /// Rows enough to pass the reply limit (nil: no bound), for an answer without `limit`:
    /// read this many, the reply is refused before the last.
    var rowsToRefuse: Int? { replyLimit == .max ? nil : replyLimit / EdgePage.edgeTextMinimum + 1 }

    /// The rows a page reads at most: one more than its limit, to tell whether more follow.
    var rows: Int? { limit.map { $0 + 1 } }

    /// With `around`, what the reply holds beside its edges and envelope (at most); `advice`
    /// for a refusal without `limit`.
    init(limit: Int?, _ ctx: MethodContext, around: Int = 0, advice: String = EdgePage.advice) {
        self.limit = limit
        tooLargeAdvice = advice
        wholeLimit = ctx.replyLimit
        replyLimit = ctx.replyLimit == .max || limit == nil ? ctx.replyLimit : ctx.replyLimit - ctx.replyUsed
        // What the reply takes beside its edges: the envelope and `next` (512 is ample), and
        // the id as rendered (a client may send a long one).
        var id = [UInt8]()
        ctx.requestID?.write(to: &id)
        base = 512 + id.count + around
        bytes = base
    }

    /// Takes one edge; false once the page is full. Throws `reply_too_large` when the edge
    /// would take a whole answer past the limit; a page instead ends before it, `next` set,
    /// so a client paging on never meets the limit, and only an edge past it alone is refused
    /// (`refusal`).
    mutating func add(_ id: Int64, _ edge: Edge) throws -> Bool {
        read += 1
        if let limit, edges.count == limit {
            more = true
            return false
        }
        // In-process nothing bounds the reply.
        if replyLimit != .max, try !fits(id, edge) {
            more = true
            return false
        }
        edges.append(edge)
        last = id
        return true
    }

    /// Whether the reply with `edge` still fits, counting it. Rendering each edge to measure
    /// it cost a page of 100 edges a tenth to a third more CPU (PERFORMANCE.md): an upper
    /// bound is counted instead, and only once that passes the limit are the edges taken, and
    /// those after, measured as rendered (escapes included), so no reply that fits is refused.
    private mutating func fits(_ id: Int64, _ edge: Edge) throws -> Bool {
        if !measured {
            bytes += EdgePage.bound(edge)
            if bytes <= replyLimit { return true }
            measured = true
            bytes = edges.reduce(base) { $0 + $1.json.serialized().utf8.count + 1 }
        }
        bytes += edge.json.serialized().utf8.count + 1
        if bytes <= replyLimit { return true }
        guard limit != nil, !edges.isEmpty else { throw refusal(id) }
        return false
    }

    /// Why nothing can be answered. Without `limit`, the answer is too large: page. With it,
    /// the page's first edge is alone too large, and the refusal's `after` is its id: a page
    /// would end before it again and again, and a client pages on past it with that. In a
    /// transact whose results before leave no room for an edge that fits a reply alone, the
    /// transact is too large (`after` would skip an edge a page of its own can hold).
    private func refusal(_ id: Int64) -> StoreError {
        guard limit != nil else { return .replyTooLarge(wholeLimit, advice: tooLargeAdvice) }
        // `bytes` is the edge as rendered, with the reply around it.
        if replyLimit < wholeLimit, bytes <= wholeLimit { return MethodTable.resultsTooLarge(wholeLimit) }
        return StoreError(
            .replyTooLarge,
            "edge \(id) alone would make the reply larger than \(wholeLimit) bytes (control.max_reply_bytes): "
                + "page on past it with after \(id) (data.detail.after)",
            detail: ["after": .int(id)])
    }

    /// The most bytes `edge` takes in the reply, its comma included: 128 for the member names
    /// and punctuation (116 with every member), 40 a rule (the longest name is 36 bytes), and
    /// each text at its worst escaped.
    static func bound(_ edge: Edge) -> Int {
        func text(_ s: String) -> Int { JSONCursor.stringMaximum(s.utf8.count) }
        var n = 128 + 40 * edge.rules.rawValue.nonzeroBitCount + text(edge.name)
        n += text(edge.source.collection) + text(edge.source.key)
        switch edge.destination {
        case .object(let r): n += text(r.collection) + text(r.key)
        case .file(let path): n += text(path)
        }
        if case .derived(let field) = edge.kind { n += text(field) }
        return n
    }

    /// `{edges}`, and with `limit` also `next`: null after the last page.
    var result: JSONValue {
        var o: [String: JSONValue] = ["edges": .array(edges.map(\.json))]
        if limit != nil { o["next"] = more ? last.map { .int($0) } ?? .null : .null }
        return .object(o)
    }
}
