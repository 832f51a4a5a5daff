// The cap on a `min_free` out of reach (MinFreeStep.swift): kept in the store's memory by root,
// and in its database (MinFreeCap+Meta.swift), since only the bytes free when it engaged and those
// moved since make it: what is free after a restart says nothing of what the cache added before.
// The changes wait here for the daemon to log them once.

import JSON

/// The floor in effect on a filesystem whose `policy.min_free` no eviction can meet, and why.
public struct MinFreeCap: Sendable, Equatable {
    /// The filesystem (`st_dev`).
    public var device: Int64
    /// The managed root on it that reports name.
    public var root: String
    /// `policy.min_free` as configured.
    public var minFree: Int64
    /// The floor in effect: free space and due unlinks when the floor was found out of reach,
    /// moved since by what other programs freed or took there.
    public var cap: Int64
    /// The most the files assetd holds there may add up to: what they did when the cap engaged,
    /// less what other programs have taken since (never more: the cache grows into no room freed).
    public var share: Int64
    /// Free space, due unlinks and every file assetd holds there, as the last run found them:
    /// the most that could be free with all of them gone, less than `minFree` and the margin.
    public var reachable: Int64
    /// The room and the share when the cap engaged, which every later run measures from.
    public var engagedRoom: Int64
    public var engagedShare: Int64

    /// The cap after a run that finds the floor out of reach (`reachable` < `minFree`), given the
    /// one before it (nil: it engages now, at `room`). `reachable` moves only when something
    /// else than assetd's files takes or frees room there (a put moves bytes from free to held):
    /// the share is what it holds beyond the room at engagement, at most the share then, so what
    /// others take comes out of the share and what they free raises the cap. Measured from the
    /// engagement each run, not from the last run: a dip (a file written before its put, an
    /// unlink deferred, the database growing) is given back once it ends.
    static func next(
        _ before: MinFreeCap?, device: Int64, root: String, minFree: Int64, room: Int64, reachable: Int64
    ) -> MinFreeCap {
        let room0 = before?.engagedRoom ?? room
        let share0 = before?.engagedShare ?? max(0, reachable.subtracting(saturating: room))
        let share = min(share0, max(0, reachable.subtracting(saturating: room0)))
        // Within the lift margin the sum may pass the floor: the cap never does.
        return MinFreeCap(
            device: device, root: root, minFree: minFree, cap: min(minFree, reachable.subtracting(saturating: share)),
            share: share,
            reachable: reachable, engagedRoom: room0, engagedShare: share0)
    }

    /// How far past `minFree` the sum must be for a cap to lift: 1% of the floor, and at least
    /// 64 MiB or a quarter of the floor, whichever is less. Near the edge the sum moves by more
    /// than what others do: it counts files' lengths where free space counts blocks, and the
    /// database grows on the same disk. Without a margin a cap went and came back a warning each
    /// way, and each lift evicted for the full floor. A quarter keeps a small floor liftable.
    static func liftMargin(_ minFree: Int64) -> Int64 { max(minFree / 100, min(64 << 20, minFree / 4)) }

    /// `{root, min_free, cap, share, reachable}`.
    public var json: JSONValue {
        .object([
            "root": .string(root), "min_free": .int(minFree), "cap": .int(cap), "share": .int(share),
            "reachable": .int(reachable),
        ])
    }
}

/// A cap that began or ended, for the daemon's log (one line each, not one a run).
public enum MinFreeCapChange: Sendable, Equatable {
    /// A run found `min_free` out of reach there.
    case engaged(MinFreeCap)
    /// A run found it can be met again: `reachable` bytes free, queued or held there.
    case lifted(MinFreeCap, reachable: Int64)
    /// `policy.min_free` changed: the next run judges the new floor.
    case dropped(MinFreeCap)
}

extension Store {
    /// The caps in effect, in root order.
    public var minFreeCaps: [MinFreeCap] {
        state.withLock { $0.minFreeCaps.values.sorted { ($0.root, $0.device) < ($1.root, $1.device) } }
    }

    /// The caps that began or ended since the last call, oldest first.
    public func takeMinFreeCapChanges() -> [MinFreeCapChange] {
        state.withLock { s in
            let changes = s.minFreeCapChanges
            s.minFreeCapChanges = []
            return changes
        }
    }

    func minFreeCap(root: String) -> MinFreeCap? { state.withLock { $0.minFreeCaps[root] } }

    /// Keeps `cap` unless `policy.min_free` is no longer its floor; says whether it did.
    func setMinFreeCap(_ cap: MinFreeCap, engaged: Bool) -> Bool {
        state.withLock {
            guard $0.policy?.minFree == cap.minFree else { return false }
            $0.minFreeCaps[cap.root] = cap
            if engaged { $0.noteMinFreeCap(.engaged(cap)) }
            return true
        }
    }

    func liftMinFreeCap(_ cap: MinFreeCap, reachable: Int64) {
        state.withLock {
            $0.minFreeCaps[cap.root] = nil
            $0.noteMinFreeCap(.lifted(cap, reachable: reachable))
        }
    }
}

extension Store.State {
    /// Drops every cap, for a `min_free` changed or gone.
    mutating func dropMinFreeCaps() {
        for cap in minFreeCaps.values.sorted(by: { $0.root < $1.root }) { noteMinFreeCap(.dropped(cap)) }
        minFreeCaps = [:]
    }

    /// Keeps the latest changes only: a store no daemon reads them from holds a few at most.
    mutating func noteMinFreeCap(_ change: MinFreeCapChange) {
        minFreeCapChanges.append(change)
        if minFreeCapChanges.count > 64 { minFreeCapChanges.removeFirst(minFreeCapChanges.count - 64) }
    }
}
