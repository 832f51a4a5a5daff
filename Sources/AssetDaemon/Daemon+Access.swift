// The access-flush timer (assetd(8), object.touch): every store.access_flush, when touches
// have left access times in memory, one `store.flushAccesses()` on the thread pool, never two
// at once. Policy runs, index queries and the shutdown flush on their own (Store+Access.swift).

import AssetStore
import EventLoop

extension Daemon {
    /// Starts the timer that writes pending access times every `store.access_flush`.
    func startAccessFlushTimer() throws(UVError) {
        let timer = try EventLoop.Timer(loop: loop)
        accessFlushTimer = timer
        try timer.start(after: config.accessFlush, repeating: config.accessFlush) { [unowned self] in flushAccesses() }
    }

    /// One flush on the pool, unless nothing is pending or one is running.
    func flushAccesses() {
        guard !stopping, !accessFlushRunning, store.syncFailure == nil, store.pendingAccessCount > 0 else { return }
        accessFlushRunning = true
        let box = Box<Result<CommitReport?, any Error>>()
        let store = self.store!
        do {
            try submit({ box.value = Result { try store.flushAccesses() } }) { [unowned self] in
                accessFlushRunning = false
                switch box.value {
                case .success(let report?)?: noteCommit(report.commit)
                case .failure(let e)?: logger.error("cannot write access times (kept in memory): \(e)")
                default: break
                }
            }
        } catch {
            accessFlushRunning = false
            logger.error("cannot schedule a flush of access times: \(error)")
        }
    }
}
