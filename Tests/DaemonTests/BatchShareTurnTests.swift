// A group commit's turn and budgets across batches (BatchShares, BatchTurn), in process: a
// uid whose oldest put was passed over goes first in the next batch even when its light puts
// ran; a light put goes past the batch's bytes budget, within a budget of its own; and after
// a batch's sync fails, the puts it deferred are not answered "committed, not durable". At a
// bound of 10 an allowance is 110 calls, the batch's budget 220 (BatchShareTests).

@testable import AssetDaemon
@testable import AssetStore
import AssetStoreTestSupport
import ControlProtocol
import Foundation
import Testing

@Suite(.serialized)
struct BatchShareTurnTests: FileAccessSuite {
    let folders = TempFolders(prefix: "assetd-batchturn-")
    let bob: UInt32 = 1001
    let eve: UInt32 = 1002

    /// A store whose objects c/o0 … each hold the same `files` files below its root through
    /// manual edges: each put of one reads them all again.
    private func holding(objects: Int, files: Int) throws -> Store {
        let (store, root) = try openStore()
        var ops = [JSONValue]()
        for o in 0..<objects {
            ops.append(["method": "object.put", "params": put(o)])
            for i in 0..<files {
                let path = root + "/f\(i).bin"
                if o == 0 { #expect(FileManager.default.createFile(atPath: path, contents: Data("x".utf8))) }
                let edge: JSONValue = [
                    "name": "f", "source": ["collection": "c", "key": .string("o\(o)")],
                    "destination": ["file": .string(path)], "rules": ["deleteDestinationIfSourceDeleted"],
                ]
                ops.append(["method": "edge.add", "params": edge])
            }
        }
        _ = try MethodTable.call("transact", ["ops": .array(ops)], caller(store, eve, nil)).get()
        return store
    }

    private func put(_ o: Int) -> JSONValue { ["collection": "c", "key": .string("o\(o)"), "value": [:]] }

    private func fresh(_ key: String) -> JSONValue { ["collection": "c", "key": .string(key), "value": [:]] }

    private func caller(_ store: Store, _ uid: UInt32, _ limit: Int?) -> MethodContext {
        var ctx = context(store, uid: uid, enforce: false)
        ctx.cascadeLimit = limit
        return ctx
    }

    /// One batch of `inputs` (each of `bytes` request bytes, 0 if not given), its uids from
    /// `turn`'s.
    private func batch(
        _ store: Store, _ inputs: [(JSONValue, MethodContext)], bytes: [Int]? = nil, turn: BatchTurn = BatchTurn()
    ) -> PutBatch.Done<Int> {
        var taken = false
        return PutBatch.run(store, bytes: { bytes?[$0] ?? 0 }, turn: turn) { () -> [(Int, Params, MethodContext)] in
            defer { taken = true }
            return taken ? [] : inputs.enumerated().map { ($0.offset, Params($0.element.0), $0.element.1) }
        }
    }

    private func commit(_ r: Result<MethodOutcome, RPCError>) -> Int64? {
        try? r.get().result["commit"]?.intValue
    }

    private func unsynced(_ r: Result<MethodOutcome, RPCError>) -> Bool {
        guard case .failure(let e) = r else { return false }
        return e.message.contains("could not be synced")
    }

    @Test("a uid's heavy put passed over while its light puts run goes first in the next batch")
    func passedOverGoesNext() throws {
        // 70 files each: four re-puts fill the batch's budget. Eight attacker uids round the
        // victim's (2005) each re-put an object of their own on every batch; the victim has one
        // heavy put, and a light put on another connection in each batch.
        let store = try holding(objects: 9, files: 70)
        defer { store.close() }
        let victim: UInt32 = 2005
        let attackers: [UInt32] = [2001, 2002, 2003, 2004, 2006, 2007, 2008, 2009]
        var queue: [(name: String, params: JSONValue, ctx: MethodContext)] =
            attackers.enumerated().map { ("a\($0.offset)", put($0.offset), caller(store, $0.element, 10)) }
            + [("heavy", put(8), caller(store, victim, 10))]
        let turn = BatchTurn()
        var heavyIn: Int?
        for b in 0..<4 {
            queue.append(("light\(b)", fresh("n\(b)"), caller(store, victim, 10)))
            let done = batch(store, queue.map { ($0.params, $0.ctx) }, turn: turn)
            #expect(done.results.allSatisfy { commit($0.1) != nil }, "\(done.results)")
            let answered = done.results.map { queue[$0.0] }
            if heavyIn == nil && answered.contains(where: { $0.name == "heavy" }) { heavyIn = b }
            #expect(answered.contains { $0.name == "light\(b)" }, "batch \(b)")
            // The deferred first, in their order; each attacker answered puts again.
            queue = done.deferred.map { queue[$0] } + answered.filter { $0.name.hasPrefix("a") }
        }
        // Passed over in the first batch (the budget spent before its turn), first in the second.
        #expect(heavyIn == 1)
    }

    @Test("past the batch's bytes budget a bystander's light put goes, within a budget of its own")
    func lightPutsPastBudget() throws {
        let (store, _) = try openStore()
        defer { store.close() }
        // Three uids' puts of 800 KiB lines (two fill the 1 MiB budget), a bystander's 200-byte
        // put, then 70 uids' puts of 4 KiB each.
        let heavy = 800 << 10
        let inputs =
            (0..<3).map { (fresh("h\($0)"), caller(store, 2001 + UInt32($0), 10)) }
            + [(fresh("b"), caller(store, 2004, 10))]
            + (0..<70).map { (fresh("l\($0)"), caller(store, 3000 + UInt32($0), 10)) }
        let bytes = [heavy, heavy, heavy, 200] + Array(repeating: 4096, count: 70)
        let done = batch(store, inputs, bytes: bytes)
        #expect(done.results.allSatisfy { commit($0.1) != nil })
        let answered = Set(done.results.map(\.0))
        #expect(answered.isSuperset(of: [0, 1, 3]) && !answered.contains(2), "\(done.results.map(\.0))")
        // The light puts past the budget: 256 KiB of them, and the one that crosses it.
        let light = answered.filter { $0 >= 3 }.map { bytes[$0] }.reduce(0, +)
        #expect(light == 200 + 64 * 4096, "\(light)")
        #expect(done.deferred.count == 1 + 70 - 64)
    }

    @Test("after a batch's sync fails, the puts it deferred are refused next, not answered unsynced")
    func deferredNotUnsynced() throws {
        let store = try holding(objects: 6, files: 70)
        defer { store.close() }
        let inputs = (0..<6).map { (put($0), caller(store, 2001 + UInt32($0), 10)) }
        store.injectedSyncError.store(EIO, ordering: .relaxed)
        let first = batch(store, inputs)
        // Four ran (BatchShareTests.batchBudget), committed but not synced.
        #expect(first.results.map(\.0) == [0, 1, 2, 3], "\(first.results)")
        #expect(first.results.allSatisfy { unsynced($0.1) }, "\(first.results)")
        #expect(first.deferred == [4, 5])
        // The next batch is refused before it begins: nothing of them was committed.
        let next = batch(store, first.deferred.map { inputs[$0] })
        #expect(next.results.count == 2)
        #expect(next.results.allSatisfy { commit($0.1) == nil && !unsynced($0.1) }, "\(next.results)")
    }

    @Test("after a retry's sync fails, the puts the retry deferred are refused next, not answered unsynced")
    func retryDeferredNotUnsynced() throws {
        let store = try holding(objects: 6, files: 70)
        defer { store.close() }
        // A failing put first in turn: the plain run stops at it, the retry runs it and four
        // heavy puts, and defers the last two.
        let failing: JSONValue = ["collection": "c", "key": "bad", "value": ["file": "/etc/passwd"]]
        let heavy = (0..<6).map { (put($0), caller(store, 2001 + UInt32($0), 10)) }
        let inputs = [(failing, caller(store, 2000, 10))] + heavy
        store.injectedSyncError.store(EIO, ordering: .relaxed)
        let first = batch(store, inputs)
        #expect(first.results.map(\.0) == [0, 1, 2, 3, 4], "\(first.results)")
        #expect(first.results.allSatisfy { unsynced($0.1) }, "\(first.results)")
        #expect(first.deferred == [5, 6])
        let next = batch(store, first.deferred.map { inputs[$0] })
        #expect(next.results.count == 2)
        #expect(next.results.allSatisfy { commit($0.1) == nil && !unsynced($0.1) }, "\(next.results)")
    }
}
