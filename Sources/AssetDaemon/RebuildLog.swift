// The log lines of index rebuilds at start-up: one when a rebuild begins, one when it ends,
// and progress between. A rebuild reports its start and its end (0 of 0 objects twice, on an
// empty database); the state here tells the two apart so the same line is not logged twice.

import AssetStore
import Logging
import Synchronization

/// Turns an open's `IndexRebuildProgress` reports into log lines.
final class RebuildLog: Sendable {
    private let logger: Logger
    /// The indexes whose rebuild began and has not ended.
    private let running = Mutex<Set<String>>([])

    init(_ logger: Logger) { self.logger = logger }

    /// Logs `p` at info: "rebuilding index I: N objects", "rebuilding index I: d/N objects",
    /// then "rebuilt index I: N objects".
    func note(_ p: IndexRebuildProgress) {
        let began = running.withLock { $0.insert(p.index).inserted }
        if began {
            logger.info("rebuilding index \(p.index): \(p.total) objects")
        } else if p.done >= p.total {
            running.withLock { _ = $0.remove(p.index) }
            logger.info("rebuilt index \(p.index): \(p.total) objects")
        } else {
            logger.info("rebuilding index \(p.index): \(p.done)/\(p.total) objects")
        }
    }
}
