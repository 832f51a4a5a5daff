// The streams the daemon closed that still flush their last replies: what each holds (counted
// in control.total_buffer_bytes), when it must be gone by, and when it last took any bytes.
// Loop-bound; ControlServer keeps the total and the slots in step with it.

import EventLoop

struct ClosingStreams {
    struct Entry {
        let stream: PipeStream
        /// When it is closed outright, taken or not.
        let deadline: Double
        /// A connection's own stream: the uid whose slot it keeps until it is gone.
        let uid: UInt32?
        /// Its write queue when last recounted: what it adds to the total.
        var counted: Int
        /// The epoch (ControlServer.stallEpoch) in which it was closed or last took bytes.
        var tookIn: Int
    }

    private(set) var entries: [ObjectIdentifier: Entry] = [:]
    /// Entries with a uid: connections closing that still hold their slots.
    private(set) var connections = 0

    var isEmpty: Bool { entries.isEmpty }

    /// Bytes the closing streams hold. Summed when asked (stats), not kept beside `entries`.
    var bytes: Int { entries.values.reduce(0) { $0 + $1.counted } }

    /// Adds `stream`, which holds its write queue now; returns that.
    mutating func add(_ stream: PipeStream, deadline: Double, uid: UInt32?, epoch: Int) -> Int {
        let held = stream.writeQueueSize
        entries[ObjectIdentifier(stream)] = Entry(
            stream: stream, deadline: deadline, uid: uid, counted: held, tookIn: epoch)
        if uid != nil { connections += 1 }
        return held
    }

    mutating func remove(_ id: ObjectIdentifier) -> Entry? {
        guard let e = entries.removeValue(forKey: id) else { return nil }
        if e.uid != nil { connections -= 1 }
        return e
    }

    /// Brings every count up to date with its write queue; returns the change of their sum.
    /// Nothing is written to a closing stream, so a count only falls: the client took bytes.
    mutating func recount(epoch: Int) -> Int {
        var delta = 0
        // Not `for i in entries.values.indices`: those indices hold a second reference to the
        // storage, and the first write below would copy the whole dictionary.
        var i = entries.values.startIndex
        while i != entries.values.endIndex {
            let now = entries.values[i].stream.writeQueueSize
            if now != entries.values[i].counted {
                delta += now - entries.values[i].counted
                entries.values[i].counted = now  // in place: the values are mutable, not the keys
                entries.values[i].tookIn = epoch
            }
            entries.values.formIndex(after: &i)
        }
        return delta
    }

    /// Those past their deadline.
    func expired(now: Double) -> [ObjectIdentifier] {
        entries.compactMap { $0.value.deadline <= now ? $0.key : nil }
    }

    /// The one with the most bytes waiting among those that took none since before the
    /// previous epoch began (a second or more), like an open connection behind.
    func worstBehind(epoch: Int) -> (id: ObjectIdentifier, entry: Entry)? {
        var worst: (id: ObjectIdentifier, entry: Entry)?
        for (id, e) in entries where e.tookIn + 1 < epoch && e.counted > (worst?.entry.counted ?? 0) {
            worst = (id, e)
        }
        return worst
    }
}
