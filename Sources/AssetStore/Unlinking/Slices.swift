// Work over contiguous slices of a range on several threads at once, for blocking system
// calls: an unlink waits on the disk (with `discard`, on the device), so more threads than
// cores pay off. Every thread has joined before the results are read.

import Foundation
import Synchronization

/// Maps `0..<count` in order, split into up to `threads` contiguous slices, each handled by
/// `work` on its own thread (the first on the calling thread); returns the slices' results
/// concatenated in order. `work` must return one result per index of its slice.
func inSlices<T: Sendable>(count: Int, threads: Int, _ work: @escaping @Sendable (Range<Int>) -> [T]) -> [T] {
    let n = max(1, min(threads, count))
    if n == 1 { return work(0..<count) }
    let bounds = (0...n).map { $0 * count / n }
    let results = SliceResults<T>(n)
    let group = DispatchGroup()
    for s in 1..<n {
        group.enter()
        let range = bounds[s]..<bounds[s + 1]
        Thread {
            results.set(s, work(range))
            group.leave()
        }.start()
    }
    results.set(0, work(bounds[0]..<bounds[1]))
    group.wait()
    let out = results.all()
    precondition(out.count == count, "a slice returned \(out.count) results for \(count) indexes")
    return out
}

/// Each slice's results, set once by its thread.
private final class SliceResults<T: Sendable>: Sendable {
    private let slices: Mutex<[[T]]>

    init(_ n: Int) { slices = Mutex(Array(repeating: [], count: n)) }

    func set(_ slice: Int, _ values: [T]) { slices.withLock { $0[slice] = values } }

    func all() -> [T] { slices.withLock { $0.flatMap { $0 } } }
}
