// `min_free` for one filesystem (assetd.toml(5), [policy]), and its cap when out of reach:
// when free space, queued unlinks and every file assetd holds there add up to less than the
// floor, no eviction can meet it, so the floor in effect becomes the room free when that was
// found, and the cache evicts back to it what it adds, not everything it holds (docs/DESIGN.md).

import GRDB

/// `min_free` for one filesystem: bytes queued for unlinking there count as freed, unless
/// the next sweep will not free them: deferred (a lease, an open file), failed, or leased now.
final class MinFreeStep: BytesStep {
    let device: Int64
    /// The filesystem's device and the earlier numbers it had, which files recorded before it
    /// was numbered anew still carry.
    let devices: [Int64]
    let minFree: Int64
    /// The floor this run applies, judged at its first batch: `minFree`, or the cap.
    private var floor: Int64?
    override var phase: String { "min_free" }
    override var reason: EvictionReason { .minFree }

    init(device: Int64, earlier: [Int64] = [], minFree: Int64) {
        self.device = device
        devices = [device] + earlier
        self.minFree = minFree
    }

    /// "(?, ?)": one placeholder per number in `devices`.
    private var placeholders: String { "(" + devices.map { _ in "?" }.joined(separator: ", ") + ")" }

    /// The bytes queued here, counted once a run (MinFreeQueue.swift).
    private lazy var queue = MinFreeQueue(devices: devices, placeholders: placeholders)

    override func need(_ tx: WriteTransaction, _ run: PolicyRun) throws -> Int64 {
        guard let free = tx.store.roots.freeBytes(device: device) else { return 0 }
        let room = free.adding(saturating: try queue.count(tx))
        if floor == nil { floor = try judge(room: room, tx, run) }
        return (floor ?? minFree).subtracting(saturating: room)
    }

    /// The whole queue counted again, where the count so far may read the floor met when it
    /// is not (rows left the queue since, names of one file counted each); the step goes on
    /// from it.
    override func recount(_ tx: WriteTransaction, _ run: PolicyRun) throws -> Int64? {
        guard try queue.mayBeOff(tx), let free = tx.store.roots.freeBytes(device: device) else { return nil }
        let room = free.adding(saturating: try queue.count(whole: tx))
        return (floor ?? minFree).subtracting(saturating: room)
    }

    /// The floor in effect: `minFree` if evicting every file assetd holds here could meet it,
    /// else the cap (`MinFreeCap.next`). At the first batch of a run: a SUM over the files
    /// here, only when the room is short of `minFree` (of `minFree` and the margin while a cap
    /// holds, so at every run then). A dry run keeps what it judged to itself.
    private func judge(room: Int64, _ tx: WriteTransaction, _ run: PolicyRun) throws -> Int64 {
        let root = tx.store.roots.root(onDevice: device) ?? "device \(device)"
        // One judged for another min_free (a reload during a run) is no cap of this one.
        let before = try tx.store.minFreeCap(root: root, device: device, minFree: minFree, tx.db)
        let lift = before == nil ? minFree : minFree.adding(saturating: MinFreeCap.liftMargin(minFree))
        var reachable = room
        if room < lift {
            let held =
                try Int64.fetchOne(
                    tx.db, sql: MinFreeStep.heldSQL(placeholders),
                    arguments: StatementArguments(devices) + StatementArguments(devices)) ?? 0
            reachable = room.adding(saturating: max(0, held))
        }
        guard reachable < lift else {
            if !run.dryRun {
                if let before { tx.store.liftMinFreeCap(before, reachable: reachable) }
                try tx.store.forgetMinFreeCap(root: root, tx.db, run)
            }
            return minFree
        }
        let cap = MinFreeCap.next(
            before, device: device, root: root, minFree: minFree, room: room, reachable: reachable)
        run.noteCap(cap)
        // Not kept if min_free changed since the run began (a reload): it is no cap of the new one.
        if !run.dryRun, tx.store.setMinFreeCap(cap, engaged: before == nil) {
            try tx.store.recordMinFreeCap(cap, tx.db, run)
        }
        return cap.cap
    }

    /// The bytes of the files on the devices of `placeholders` (bound twice), each file once
    /// however many names it has: names count nothing more when they go. A file registered
    /// missing has no device and 0 bytes, so it is never in it. The shared list drives the
    /// excess (`Sizes.excess`), which SQLite without statistics would read the other way round.
    static func heldSQL(_ placeholders: String) -> String {
        let filter = "f.device IN \(placeholders)"
        return "SELECT CAST(TOTAL(f.size) - (\(Sizes.excess(where: filter))) AS INTEGER) FROM file f WHERE \(filter)"
    }

    override var filter: (String, StatementArguments) {
        (
            "EXISTS (SELECT 1 FROM edge e JOIN file f ON f.id = e.dst WHERE e.src = d.id AND e.is_file = 1 AND f.device IN \(placeholders))",
            StatementArguments(devices)
        )
    }

    override func counted(_ effect: EvictionEffect) -> Int64 {
        queue.noteEvicted()
        return effect.files.reduce(0) { $0.adding(saturating: $1.device.map(devices.contains) == true ? $1.size : 0) }
    }
}
