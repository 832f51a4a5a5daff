// A full disk, as the daemon tells it: what the store did about the reserve and the WAL
// (Store+Reserve.swift), logged on the sweep timer.

import AssetStore

extension Daemon {
    /// Logs what happened to the disk since the last tick.
    func logSpaceNotices() {
        for n in store.takeSpaceNotices() {
            switch n.level {
            case .info: logger.info("\(n.message)")
            case .warning: logger.warning("\(n.message)")
            }
        }
    }
}
