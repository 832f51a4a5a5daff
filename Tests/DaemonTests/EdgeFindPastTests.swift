// edge.find past an edge that alone is larger than control.max_reply_bytes: the refusal names
// it as `data.detail.after`, so a client pages on past it; and in transact a page fills what
// the results before it leave, not the whole limit. Run in process on a real store.

@testable import AssetService
@testable import AssetStore
import AssetStoreTestSupport
import ControlProtocol
import Foundation
import Testing

@Suite struct EdgeFindPastTests {
    private let folders = TempFolders(prefix: "assetd-edgefindpast-")

    /// The edge add of `name` from e/s to e/`destination`.
    private static func add(_ name: String, to destination: String = "d") -> JSONValue {
        [
            "method": "edge.add",
            "params": [
                "name": .string(name), "source": ["collection": "e", "key": "s"],
                "destination": ["collection": "e", "key": .string(destination)], "rules": [],
            ],
        ]
    }

    /// A store with edges n-0…n-9 from e/s, then one of about 2 KB (`big`), then n-10…n-19.
    private func store() throws -> Store {
        let dir = try folders.make()
        let store = try Store(path: dir + "/db.sqlite", configuration: StoreConfiguration(roots: [dir]))
        let long = String(repeating: "k", count: 1024)
        var ops: [JSONValue] = ["s", "d", long].map {
            ["method": "object.put", "params": ["collection": "e", "key": .string($0), "value": [:]]]
        }
        ops += (0..<10).map { Self.add("n-\($0)") }
        ops.append(Self.add("big-" + String(repeating: "b", count: 1000), to: long))
        ops += (10..<20).map { Self.add("n-\($0)") }
        _ = try MethodTable.call("transact", ["ops": .array(ops)], context(store)).get()
        return store
    }

    private func context(_ store: Store, limit: Int = .max) -> MethodContext {
        var ctx = MethodContext(
            store: store, caller: Caller(uid: 1000, userName: "u", isAdmin: false), enforceOwnership: true)
        ctx.replyLimit = limit
        ctx.requestID = 7
        return ctx
    }

    private func names(_ reply: JSONValue?) -> [String] {
        (reply?["edges"]?.arrayValue ?? []).compactMap { $0["name"]?.stringValue }
    }

    @Test("an edge alone past the limit is refused with its id as data.detail.after, and paging goes on past it")
    func pagePastBigEdge() throws {
        let s = try store()
        defer { s.close() }
        let ctx = context(s, limit: 2000)
        var seen = [String]()
        var skipped = [Int64]()
        var after: Int64 = 0
        for _ in 0..<20 {
            switch MethodTable.call("edge.find", ["limit": 100, "after": .int(after)], ctx) {
            case .success(let page):
                seen += names(page.result)
                guard let next = page.result["next"]?.intValue else { break }
                after = next
                continue
            case .failure(let e):
                #expect(e.stableCode == "reply_too_large")
                let past = try #require(e.data?["detail"]?["after"]?.intValue, "\(e)")
                #expect(e.message.contains("after \(past)"))
                skipped.append(past)
                after = past
                continue
            }
            break
        }
        #expect(seen == (0..<20).map { "n-\($0)" })
        #expect(skipped == [11], "the big edge, the 11th added")
        // Without limit the whole answer is refused, naming no edge to page past.
        guard case .failure(let whole) = MethodTable.call("edge.find", [:], ctx) else {
            Issue.record("the whole answer fit")
            return
        }
        #expect(whole.data?["detail"] == nil && whole.message.contains("edge.find limit and after"))
    }

    /// A transact op getting the object with the 1 KB key, and its result as written.
    private func getOfLongKey(_ s: Store) throws -> (op: JSONValue, result: [UInt8]) {
        let key = JSONValue.string(String(repeating: "k", count: 1024))
        var got = [UInt8]()
        try MethodTable.call("object.get", ["collection": "e", "key": key], context(s)).get().result.write(to: &got)
        return (["method": "object.get", "params": ["collection": "e", "key": key]], got)
    }

    @Test("transact's edge.find page fills what the results before it leave, and the transact commits")
    func transactPageFillsWhatIsLeft() throws {
        let s = try store()
        defer { s.close() }
        // object.get of the object with the 1 KB key: over 1 KB of the result.
        let (get, got) = try getOfLongKey(s)
        let g = got.count
        let find: JSONValue = ["method": "edge.find", "params": ["limit": 10, "name": "n-3"]]
        let page: JSONValue = ["method": "edge.find", "params": ["limit": 10]]
        let done = try MethodTable.call(
            "transact", ["ops": [find, get, page, Self.add("late")]], context(s, limit: g + 1400)
        ).get().result
        let results = done["results"]?.arrayValue ?? []
        #expect(names(results.first) == ["n-3"])
        let first = names(results.dropFirst(2).first)
        #expect(!first.isEmpty && first.count < 10, "\(first)")
        #expect(results.dropFirst(2).first?["next"]?.intValue != nil)
        var line = [UInt8]()
        done.write(to: &line)
        #expect(line.count <= g + 1400)
        #expect(try MethodTable.call("edge.count", ["name": "late"], context(s)).get().result == ["count": 1])
        // Results before that leave no room for an edge that fits a reply of its own: the
        // transact is too large, and names no edge to skip.
        guard
            case .failure(let e) = MethodTable.call(
                "transact", ["ops": [get, get, page]], context(s, limit: 2 * g + 400))
        else {
            Issue.record("two gets and a page fit")
            return
        }
        #expect(e.stableCode == "reply_too_large")
        #expect(e.data?["detail"] == nil && e.message.hasPrefix("ops[2]: the results of this transact"), "\(e)")
    }

    @Test("in transact an edge that fits a reply alone, with no room left, refuses the transact, not the edge")
    func transactNoRoomForAnEdgeThatFitsAlone() throws {
        let s = try store()
        defer { s.close() }
        let (get, got) = try getOfLongKey(s)
        // The big edge (id 11) as rendered.
        let alone = try MethodTable.call("edge.find", ["limit": 1, "after": 10], context(s)).get().result
        var edge = [UInt8]()
        try #require(alone["edges"]?.arrayValue?.first).write(to: &edge)
        #expect(got.count + 1 < edge.count, "the get alone fits under either limit")
        // A page of it after the get. Under a limit the edge fits with the reply around it,
        // but not after the get: the transact's results are too large, and no edge is named.
        let page: JSONValue = ["method": "edge.find", "params": ["limit": 10, "after": 10]]
        guard
            case .failure(let e) = MethodTable.call(
                "transact", ["ops": [get, page]], context(s, limit: edge.count + 600))
        else {
            Issue.record("a get and the big edge fit")
            return
        }
        #expect(e.stableCode == "reply_too_large")
        #expect(e.data?["detail"] == nil && e.message.hasPrefix("ops[1]: the results of this transact"), "\(e)")
        // Under a limit below the edge's own size it is named, to page on past.
        guard
            case .failure(let past) = MethodTable.call("transact", ["ops": [get, page]], context(s, limit: edge.count))
        else {
            Issue.record("a get and the big edge fit under less than the edge")
            return
        }
        #expect(past.data?["detail"]?["after"]?.intValue == 11, "\(past)")
        #expect(past.message.hasPrefix("ops[1]: edge 11 alone"), "\(past)")
    }

    @Test(
        "in transact an edge.find without limit that fits a reply alone but not after the results before is the transact's"
    )
    func transactWholeAnswerAfterOthers() throws {
        let s = try store()
        defer { s.close() }
        let (get, got) = try getOfLongKey(s)
        let find: JSONValue = ["method": "edge.find", "params": ["name": "n-3"]]
        var one = [UInt8]()
        try MethodTable.call("edge.find", ["name": "n-3"], context(s)).get().result.write(to: &one)
        // The find alone fits the whole limit (with 512 bytes of envelope), not after the get.
        let limit = got.count + one.count / 2
        #expect(one.count + 520 < limit)
        let alone = MethodTable.call("transact", ["ops": [find]], context(s, limit: limit))
        #expect((try? alone.get()) != nil, "the find alone fits")
        guard case .failure(let e) = MethodTable.call("transact", ["ops": [get, find]], context(s, limit: limit)) else {
            Issue.record("a get and the find fit")
            return
        }
        #expect(e.stableCode == "reply_too_large")
        #expect(e.message.hasPrefix("ops[1]: the results of this transact"), "\(e)")
        #expect(!e.message.contains("edge.find limit and after"), "\(e)")
    }
}
