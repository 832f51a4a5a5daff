// The tests' forms of PutBatch.run: puts given as tuples, and a whole list run to its end
// (the deferred ones in the next batches). The daemon's committer uses neither.

@testable import AssetDaemon
import AssetStore
import ControlProtocol
import JSON

extension PutBatch {
    /// The batch of `inputs`, synced, and the next batches of the puts it deferred until all
    /// are answered; the answers in their order.
    static func run(_ store: Store, _ inputs: [(JSONValue, MethodContext)], bytes: Int = 0) -> Done<Int> {
        var all = Done<Int>()
        var left = Array(inputs.indices)
        let turn = BatchTurn()
        while !left.isEmpty {
            var taken = false
            let done = run(store, bytes: { _ in bytes }, turn: turn) { () -> [Put<Int>] in
                defer { taken = true }
                return taken ? [] : left.map { Put(tag: $0, params: Params(inputs[$0].0), context: inputs[$0].1) }
            }
            all.results += done.results
            all.commits += done.commits
            left = done.deferred
        }
        all.results.sort { $0.0 < $1.0 }
        return all
    }

    /// `run(_:syncing:bytes:turn:take:)` of puts given as tuples (the tests').
    static func run<Tag>(
        _ store: Store, syncing: Bool = true, bytes: (Tag) -> Int = { _ in 0 }, turn: BatchTurn = BatchTurn(),
        take: () -> [(Tag, Params, MethodContext)]
    ) -> Done<Tag> {
        run(store, syncing: syncing, bytes: bytes, turn: turn) { () -> [Put<Tag>] in
            take().map { Put(tag: $0.0, params: $0.1, context: $0.2) }
        }
    }
}
