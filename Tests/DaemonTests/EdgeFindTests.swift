// edge.find under control.max_reply_bytes and with paging, run in process on a real store: a
// whole answer past the limit is refused after reading about the limit's worth of edges, not
// all of them; `limit` and `after` page by edge id, each page within the limit, the pages
// covering every edge once; in transact a refusal rolls the transaction back. Edge names are
// bounded as keys are.

@testable import AssetService
@testable import AssetStore
import AssetStoreTestSupport
import ControlProtocol
import Foundation
import Testing

@Suite struct EdgeFindTests {
    private let folders = TempFolders(prefix: "assetd-edgefind-")
    private static let id: RPCID = 7

    /// A store with `count` edges from e/s to e/d, named n-0… in the order added.
    private func store(edges count: Int) throws -> Store {
        let dir = try folders.make()
        let store = try Store(path: dir + "/db.sqlite", configuration: StoreConfiguration(roots: [dir]))
        var ops: [JSONValue] = [
            ["method": "object.put", "params": ["collection": "e", "key": "s", "value": [:]]],
            ["method": "object.put", "params": ["collection": "e", "key": "d", "value": [:]]],
        ]
        for i in 0..<count {
            ops.append([
                "method": "edge.add",
                "params": [
                    "name": .string("n-\(i)"), "source": ["collection": "e", "key": "s"],
                    "destination": ["collection": "e", "key": "d"], "rules": [],
                ],
            ])
        }
        _ = try call("transact", ["ops": .array(ops)], context(store))
        return store
    }

    private func context(_ store: Store, limit: Int = .max) -> MethodContext {
        var ctx = MethodContext(
            store: store, caller: Caller(uid: 1000, userName: "u", isAdmin: false), enforceOwnership: true)
        ctx.replyLimit = limit
        ctx.requestID = Self.id
        return ctx
    }

    private func call(_ method: String, _ params: JSONValue, _ ctx: MethodContext) throws -> JSONValue {
        try MethodTable.call(method, params, ctx).get().result
    }

    /// The names of a reply's edges.
    private func names(_ reply: JSONValue) -> [String] {
        (reply["edges"]?.arrayValue ?? []).compactMap { $0["name"]?.stringValue }
    }

    /// Every page of edge.find with `params` from the start, at most 100.
    private func pages(_ params: [String: JSONValue], _ ctx: MethodContext) throws -> [JSONValue] {
        var out = [JSONValue]()
        var p = params
        repeat {
            let page = try call("edge.find", .object(p), ctx)
            out.append(page)
            p["after"] = page["next"] ?? .null
        } while p["after"] != .null && out.count < 100
        return out
    }

    @Test("edge.find with limit 1000 of 2,500 edges pages by id: 1000 and next, the pages cover all once")
    func paging() throws {
        let s = try store(edges: 2500)
        defer { s.close() }
        let ctx = context(s)
        let all = (0..<2500).map { "n-\($0)" }
        // Without limit: every edge, and no `next`, as before paging.
        let whole = try call("edge.find", [:], ctx)
        #expect(names(whole) == all)
        #expect(whole.objectValue?.keys.sorted() == ["edges"])

        let p = try pages(["limit": 1000], ctx)
        #expect(p.map { names($0).count } == [1000, 1000, 500])
        #expect(p.flatMap(names) == all)
        #expect(p.last?["next"] == .null)
        // `next` is the `after` of the page that follows, with a filter too.
        let first = try call("edge.find", ["limit": 2, "name": "n-7"], ctx)
        #expect(names(first) == ["n-7"] && first["next"] == .null)
        let next = try #require(p.first?["next"]?.intValue)
        #expect(names(try call("edge.find", ["after": .int(next)], ctx)) == Array(all[1000...]))
        #expect(try call("edge.find", ["after": .int(next), "limit": 1], ctx)["edges"]?.arrayValue?.count == 1)
    }

    @Test("a whole edge.find past max_reply_bytes is refused after reading about the limit's worth")
    func refusedEarly() throws {
        let s = try store(edges: 2500)
        defer { s.close() }
        // About 120 bytes an edge: 20,000 holds under 200 of the 2,500.
        let ctx = context(s, limit: 20_000)
        guard case .failure(let e) = MethodTable.call("edge.find", [:], ctx) else {
            Issue.record("edge.find past the limit answered")
            return
        }
        #expect(e.stableCode == "reply_too_large")
        #expect(e.message.contains("edge.find limit and after"))

        // The method's own reading: stopped at the edge that passed the limit.
        var page = EdgePage(limit: nil, ctx)
        #expect(throws: StoreError.self) {
            try s.read { r in try r.edges(EdgeFilter(), after: 0) { try page.add($0, $1) } }
        }
        #expect(page.read == page.edges.count + 1)
        #expect(page.read > 100 && page.read < 200)
        #expect(page.bytes > 20_000 && page.bytes < 20_000 + 200)
    }

    @Test("with limit, a page ends before max_reply_bytes with next, and the pages still cover all")
    func pageEndsBeforeLimit() throws {
        let s = try store(edges: 2500)
        defer { s.close() }
        let ctx = context(s, limit: 20_000)
        let p = try pages(["limit": 1000], ctx)
        #expect(p.count > 10)
        #expect(p.flatMap(names) == (0..<2500).map { "n-\($0)" })
        for page in p { #expect(RPCLine.result(id: Self.id, page).count <= 20_000) }
        // A single edge past the limit alone is refused, not answered as an empty page.
        guard case .failure(let e) = MethodTable.call("edge.find", ["limit": 10], context(s, limit: 600)) else {
            Issue.record("an edge past the limit alone was answered")
            return
        }
        #expect(e.stableCode == "reply_too_large")
    }

    @Test("transact's edge.find past max_reply_bytes fails the transaction: its edge.add is rolled back")
    func transactRollsBack() throws {
        let s = try store(edges: 2500)
        defer { s.close() }
        let ops: JSONValue = [
            [
                "method": "edge.add",
                "params": [
                    "name": "late", "source": ["collection": "e", "key": "d"],
                    "destination": ["collection": "e", "key": "s"], "rules": [],
                ],
            ],
            ["method": "edge.find", "params": [:]],
        ]
        guard case .failure(let e) = MethodTable.call("transact", ["ops": ops], context(s, limit: 20_000)) else {
            Issue.record("transact's edge.find past the limit answered")
            return
        }
        #expect(e.stableCode == "reply_too_large")
        #expect(e.message.hasPrefix("ops[1]: "))
        #expect(try call("edge.count", ["name": "late"], context(s)) == ["count": 0])
        // A page of it fits and commits.
        var paged = ops.arrayValue ?? []
        paged[1] = ["method": "edge.find", "params": ["limit": 10]]
        let done = try call("transact", ["ops": .array(paged)], context(s, limit: 20_000))
        #expect(done["results"]?.arrayValue?.last?["edges"]?.arrayValue?.count == 10)
        #expect(try call("edge.count", ["name": "late"], context(s)) == ["count": 1])
    }

    @Test("an edge name longer than 1,024 bytes is invalid params, in edge.add and template.set")
    func nameBound() throws {
        let s = try store(edges: 0)
        defer { s.close() }
        let ctx = context(s)
        func add(_ name: String) -> Result<MethodOutcome, RPCError> {
            MethodTable.call(
                "edge.add",
                [
                    "name": .string(name), "source": ["collection": "e", "key": "s"],
                    "destination": ["collection": "e", "key": "d"], "rules": [],
                ], ctx)
        }
        let longest = String(repeating: "é", count: 512)
        #expect(throws: Never.self) { try add(longest).get() }
        guard case .failure(let e) = add(longest + "n") else {
            Issue.record("a name of 1,025 bytes was added")
            return
        }
        #expect(e.code == Code.invalidParams)
        let admin = MethodContext(
            store: s, caller: Caller(uid: 0, userName: "root", isAdmin: true), enforceOwnership: true)
        let template: JSONValue = ["name": .string(longest + "n"), "field": "to", "to": "e", "rules": []]
        guard case .failure(let t) = MethodTable.call("template.set", ["collection": "t", "edges": [template]], admin)
        else {
            Issue.record("a template edge name of 1,025 bytes was set")
            return
        }
        #expect(t.code == Code.invalidParams)
        #expect(try call("edge.count", [:], ctx) == ["count": 1])
    }

    @Test(
        "an edge's bound is at least what it takes rendered, its comma included",
        arguments: [
            Edge(name: "n", source: ObjectRef("c", "k"), destination: .object(ObjectRef("c", "d")), rules: []),
            Edge(
                name: "\"\u{1}\\", source: ObjectRef("\u{1F}\u{7F}", "é\u{0}"), destination: .file("/r/\"\n\t/ü"),
                rules: DeleteRules(rawValue: 255), kind: .derived(field: "a.\"b\"[0]")),
            Edge(
                name: String(repeating: "\u{1}", count: 1024), source: ObjectRef("c", "k"),
                destination: .object(ObjectRef("c", String(repeating: "\"", count: 1024))),
                rules: [.deleteDestinationIfAllSourcesDeleted, .denyDeleteDestination]),
        ])
    func bound(edge: Edge) {
        #expect(EdgePage.bound(edge) >= edge.json.serialized().utf8.count + 1)
    }

    @Test("a page of a source's edges sorts only the page, not every match")
    func pageOfSourceBounded() throws {
        let store = try store(edges: 5000)
        defer { store.close() }
        // SQLite steps reading the first 11 of a source's 5,000 edges takes, counted as
        // transact's bounded reads are, with the page's LIMIT and without it.
        func steps(limit: Int?) throws -> Int {
            var spent = 0
            try store.write { tx in
                let allowed = WriteTransaction.readCalls(1_000_000)
                var n = 0
                try tx.boundedRead(1_000_000) {
                    try tx.edges(EdgeFilter(source: ObjectRef("e", "s")), limit: limit) { _, _ in
                        n += 1
                        return n < 11
                    }
                }
                spent = allowed - (tx.readAllowance?.left ?? allowed)
            }
            return spent
        }
        // Every match is still joined with its ends before the sort (the index is by source,
        // not id), but the sorter keeps 11 rows instead of 5,000: 150,700 steps against 205,200.
        let limited = try steps(limit: 11)
        let whole = try steps(limit: nil)
        #expect(Double(limited) < 0.85 * Double(whole), "\(limited) against \(whole) calls")
        let page = try call("edge.find", ["source": ["collection": "e", "key": "s"], "limit": 10], context(store))
        #expect(page["edges"]?.arrayValue?.count == 10 && page["next"] != .null)
    }
}
