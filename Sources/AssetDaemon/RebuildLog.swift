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

    /// Logs `p`: "rebuilding index I: N objects" at notice (start is held up until it ends),
    /// "rebuilding index I: d/N objects" at info, then "rebuilt index I: N objects" at info;
    /// each also as the service's status for systemd, since READY=1 waits for them.
    func note(_ p: IndexRebuildProgress) {
        let began = running.withLock { $0.insert(p.index).inserted }
        let line: String
        if began {
            line = "rebuilding index \(p.index): \(p.total) \(p.unit)\(p.total > 0 ? "; this may take a while" : "")"
            logger.notice("\(line)")
        } else if p.done >= p.total {
            running.withLock { _ = $0.remove(p.index) }
            line = "rebuilt index \(p.index): \(p.total) \(p.unit)"
            logger.info("\(line)")
        } else {
            line = "rebuilding index \(p.index): \(p.done)/\(p.total) \(p.unit)"
            logger.info("\(line)")
        }
        SystemdNotify.send("STATUS=\(line)")
    }
}
