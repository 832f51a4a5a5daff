// Server events (assetd(8), CONTROL PROTOCOL, Events) made from what a commit or a sweep did, with
// the collections each event concerns so watch filters can apply: object events by the object's
// collection, edge events by either end's, file events unfiltered by collection. A broadcast
// makes and renders each event only when a watcher first takes it (EventLines): made at once,
// the 100,000 events of one delete held the loop for seconds before any watcher read one.

import AssetService
import AssetStore
import ControlProtocol

/// One event to send to watchers.
public struct ServerEvent: Sendable {
    /// The event type.
    public var type: String
    /// Collections it concerns (an edge's two ends both, even when they are canonically
    /// equivalent names); nil for file events (they pass any collection filter).
    public var collections: [String]?
    /// The params of the `event` notification.
    public var params: JSONValue

    /// True if a watcher with `filter` gets it.
    public func matches(_ filter: EventFilter) -> Bool {
        if let types = filter.types, !types.contains(type) { return false }
        if let wanted = filter.collections, let mine = collections,
            !mine.contains(where: { wanted.contains(UTF8Key($0)) })
        {
            return false
        }
        return true
    }

    static func make(_ type: String, _ collections: [String]?, _ fields: [String: JSONValue]) -> ServerEvent {
        var p = fields
        p["type"] = .string(type)
        return ServerEvent(type: type, collections: collections, params: .object(p))
    }
}

/// What a broadcast's events are made from: a commit's report (puts, deletions with cause,
/// notifications, queued files, in that order) or a sweep's (unlinked, failed, skipped and
/// deferred files).
enum EventSource {
    case commit(CommitReport)
    case sweep(SweepReport, commit: Int64)
}

/// The parts of a report that events are made from, copied out of it: the rest (the objects
/// touched, every edge removed) makes no event and is freed with the report, not held, unweighed,
/// while a watcher lags (docs/PROTOCOL.md, Limits).
private enum EventParts {
    case commit(
        Int64, put: [ObjectRef], deleted: [DeletedObject], notifications: [EdgeNotification], files: [String])
    case sweep(
        Int64, unlinked: [String], failed: [(path: String, error: String, attempts: Int)],
        skipped: [(path: String, reason: UnlinkSkipReason)], deferred: [(path: String, reason: UnlinkDeferReason)])
}

/// A broadcast's events, each made and rendered the first time a watcher takes it and shared
/// by every watcher that takes it after: rendered per watcher, 255 watchers of one transact of
/// 14,000 puts cost the loop 3.6 million renders, seconds in which no client was answered.
/// Watchers take them a slice at a time as they read (Session.deliver). Lives while a watcher
/// holds it; a class, so the watchers share its lines.
final class EventLines {
    private let source: EventParts
    /// For a sweep's skipped files: why their look was not taken.
    private let notTaken: [String: String]
    /// The index of the first event of each part after the first.
    private let starts: (Int, Int, Int)
    /// How many events.
    let count: Int
    /// About the bytes it holds: what its events are made from (each element and its
    /// strings' storage) and their lines once rendered (strings' bytes and a constant an
    /// event). Counted once in the connections' total while any watcher holds it
    /// (docs/PROTOCOL.md, Limits): the lines alone were about half of it.
    let weight: Int
    /// The watchers holding it, and the broadcast while it hands it out.
    var holders = 0
    /// Its place among the broadcasts, the first 0: over the total, the watcher holding the
    /// oldest is dropped first (ControlServer.dropLaggingWatchers).
    var number = 0
    private var lines: [[UInt8]?]
    /// The collections of its object, object-deletion and edge events, each part's apart,
    /// gathered the first time a watcher filtered by collection asks (takesAny); weighed
    /// beforehand for a broadcast of more than `scannedLimit` events.
    private var partCollections: [Set<UTF8Key>]?
    /// Up to this many events, takesAny looks at each.
    static let scannedLimit = 16

    /// The heap bytes of a string: none for one stored inline (15 bytes or less).
    private static func held(_ s: String) -> Int {
        let n = s.utf8.count
        return n > 15 ? 32 + n : 0
    }

    private static func held(_ r: ObjectRef) -> Int { held(r.collection) + held(r.key) }

    init(_ report: EventSource) {
        // A rendered line's slot and its array's header.
        let perEvent = MemoryLayout<[UInt8]?>.stride + 32
        var weight = 0
        switch report {
        case .commit(let r):
            source = .commit(
                r.commit, put: r.put, deleted: r.deleted, notifications: r.notifications, files: r.filesQueued)
            let deletedEnd = r.put.count + r.deleted.count
            starts = (r.put.count, deletedEnd, deletedEnd + r.notifications.count)
            count = starts.2 + r.filesQueued.count
            notTaken = [:]
            for p in r.put {
                weight += 96 + p.collection.utf8.count + p.key.utf8.count
                weight += MemoryLayout<ObjectRef>.stride + Self.held(p)
            }
            for d in r.deleted {
                weight += 112 + d.ref.collection.utf8.count + d.ref.key.utf8.count
                weight += MemoryLayout<DeletedObject>.stride + Self.held(d.ref)
            }
            for n in r.notifications {
                let e = n.edge
                var ends = e.source.collection.utf8.count + e.source.key.utf8.count
                var stored = Self.held(e.name) + Self.held(e.source) + Self.held(n.node)
                switch e.destination {
                case .object(let d):
                    ends += d.collection.utf8.count + d.key.utf8.count
                    stored += Self.held(d)
                case .file(let p):
                    ends += p.utf8.count
                    stored += Self.held(p)
                }
                weight += 288 + e.name.utf8.count + 2 * ends + (n.nullifiedField?.utf8.count ?? 0)
                weight += MemoryLayout<EdgeNotification>.stride + stored + (n.nullifiedField.map(Self.held) ?? 0)
            }
            for p in r.filesQueued { weight += 96 + p.utf8.count + MemoryLayout<String>.stride + Self.held(p) }
            // The tables of collections (takesAny): at most an entry a collection of an event.
            if count > Self.scannedLimit { weight += 48 * (starts.2 + r.notifications.count) }
        case .sweep(let s, let commit):
            source = .sweep(
                commit, unlinked: s.unlinked, failed: s.failed, skipped: s.skipped, deferred: s.deferred)
            let a = s.unlinked.count
            starts = (a, a + s.failed.count, a + s.failed.count + s.skipped.count)
            count = starts.2 + s.deferred.count
            notTaken = s.lookNotTaken.isEmpty ? [:] : Dictionary(s.lookNotTaken, uniquingKeysWith: { a, _ in a })
            for p in s.unlinked { weight += 96 + p.utf8.count + MemoryLayout<String>.stride + Self.held(p) }
            for f in s.failed {
                weight += 144 + f.path.utf8.count + f.error.utf8.count
                weight += MemoryLayout<(String, String, Int)>.stride + Self.held(f.path) + Self.held(f.error)
            }
            for k in s.skipped {
                let why = notTaken[k.path]
                weight += 128 + k.path.utf8.count + (why?.utf8.count ?? 0)
                weight += MemoryLayout<(String, UnlinkSkipReason)>.stride + Self.held(k.path)
                // Its entry in `notTaken`: the key, the reason, and the table's slot.
                if let why { weight += 48 + Self.held(k.path) + Self.held(why) }
            }
            for d in s.deferred {
                weight += 144 + d.path.utf8.count + MemoryLayout<(String, UnlinkDeferReason)>.stride + Self.held(d.path)
            }
        }
        self.weight = weight + count * perEvent
        lines = Array(repeating: nil, count: count)
    }

    /// Whether a watcher with `filter` takes event `i`, without making it: its type, and the
    /// collections of its object or edge's ends (file events pass any collection filter).
    func matches(_ i: Int, _ filter: EventFilter) -> Bool {
        let type: String
        var first: String?
        var second: String?
        switch source {
        case .commit(_, let put, let deleted, let notifications, _):
            if i < starts.0 {
                type = "object.put"
                first = put[i].collection
            } else if i < starts.1 {
                type = "object.deleted"
                first = deleted[i - starts.0].ref.collection
            } else if i < starts.2 {
                type = "edge.deleted"
                let edge = notifications[i - starts.1].edge
                first = edge.source.collection
                if case .object(let d) = edge.destination { second = d.collection }
            } else {
                type = "file.queued"
            }
        case .sweep:
            type =
                i < starts.0 ? "file.unlinked" : i < starts.1 ? "file.unlink_failed" : "file.unlink_skipped"
        }
        if let types = filter.types, !types.contains(type) { return false }
        guard let wanted = filter.collections, let first else { return true }
        return wanted.contains(UTF8Key(first)) || second.map { wanted.contains(UTF8Key($0)) } == true
    }

    /// Whether a watcher with `filter` takes any of its events: one it takes none of is not
    /// queued for that watcher, nor counted against it (docs/PROTOCOL.md, Limits). Exact: a
    /// short broadcast is looked at event by event; a longer one by the types it has and, for
    /// a filter by collection, the collections of each type, gathered once for all watchers.
    func takesAny(_ filter: EventFilter) -> Bool {
        if count <= Self.scannedLimit { return (0..<count).contains { matches($0, filter) } }
        // Each part's type, its end, and whether its events have collections.
        let parts: [(String, Int, Bool)]
        switch source {
        case .commit:
            parts = [
                ("object.put", starts.0, true), ("object.deleted", starts.1, true), ("edge.deleted", starts.2, true),
                ("file.queued", count, false),
            ]
        case .sweep:
            parts = [
                ("file.unlinked", starts.0, false), ("file.unlink_failed", starts.1, false),
                ("file.unlink_skipped", count, false),
            ]
        }
        var start = 0
        for (k, (type, end, hasCollections)) in parts.enumerated() {
            defer { start = end }
            guard start < end, filter.types?.contains(type) ?? true else { continue }
            guard let wanted = filter.collections, hasCollections else { return true }
            let mine = collections()[k]
            // Each name of the smaller set looked up in the larger.
            let (few, many) = wanted.count <= mine.count ? (wanted, mine) : (mine, wanted)
            if few.contains(where: many.contains) { return true }
        }
        return false
    }

    /// The collections of the object, object-deletion and edge events, made once.
    private func collections() -> [Set<UTF8Key>] {
        if let made = partCollections { return made }
        var made = [Set<UTF8Key>(), Set<UTF8Key>(), Set<UTF8Key>()]
        if case .commit(_, let put, let deleted, let notifications, _) = source {
            for p in put { made[0].insert(UTF8Key(p.collection)) }
            for d in deleted { made[1].insert(UTF8Key(d.ref.collection)) }
            for n in notifications {
                made[2].insert(UTF8Key(n.edge.source.collection))
                if case .object(let d) = n.edge.destination { made[2].insert(UTF8Key(d.collection)) }
            }
        }
        partCollections = made
        return made
    }

    /// Event `i`, made.
    func event(_ i: Int) -> ServerEvent {
        switch source {
        case .commit(let number, let put, let deleted, let notifications, let files):
            let commit = JSONValue.int(number)
            if i < starts.0 {
                let ref = put[i]
                return ServerEvent.make(
                    "object.put", [ref.collection],
                    ["commit": commit, "collection": .string(ref.collection), "key": .string(ref.key)])
            } else if i < starts.1 {
                let d = deleted[i - starts.0]
                return ServerEvent.make(
                    "object.deleted", [d.ref.collection],
                    [
                        "commit": commit, "collection": .string(d.ref.collection), "key": .string(d.ref.key),
                        "cause": .string(d.cause.rawValue),
                    ])
            } else if i < starts.2 {
                let n = notifications[i - starts.1]
                var collections = [n.edge.source.collection]
                if case .object(let d) = n.edge.destination { collections.append(d.collection) }
                var fields: [String: JSONValue] = [
                    "commit": commit, "edge": n.edge.json, "reason": .string(n.reason.rawValue), "node": n.node.json,
                ]
                if let field = n.nullifiedField { fields["nullified"] = .string(field) }
                return ServerEvent.make("edge.deleted", collections, fields)
            }
            let path = files[i - starts.2]
            return ServerEvent.make("file.queued", nil, ["commit": commit, "path": .string(path)])
        case .sweep(let commit, let unlinked, let failed, let skipped, let deferred):
            let c = JSONValue.int(commit)
            if i < starts.0 {
                return ServerEvent.make("file.unlinked", nil, ["commit": c, "path": .string(unlinked[i])])
            }
            if i < starts.1 {
                let f = failed[i - starts.0]
                return ServerEvent.make(
                    "file.unlink_failed", nil,
                    [
                        "commit": c, "path": .string(f.path), "error": .string(f.error),
                        "attempts": .int(Int64(f.attempts)),
                    ])
            }
            if i < starts.2 {
                let k = skipped[i - starts.1]
                var fields: [String: JSONValue] = [
                    "commit": c, "path": .string(k.path), "reason": .string(k.reason.rawValue),
                ]
                // Kept because its owed look could not vouch for the file there: said apart.
                if let why = notTaken[k.path] { fields["why"] = .string(why) }
                return ServerEvent.make("file.unlink_skipped", nil, fields)
            }
            // Kept for now and retried later (open, or leased): same type, told apart by `deferred`.
            let d = deferred[i - starts.2]
            return ServerEvent.make(
                "file.unlink_skipped", nil,
                ["commit": c, "path": .string(d.path), "reason": .string(d.reason.rawValue), "deferred": true])
        }
    }

    /// The line of event `i`; an event no watcher takes is never made nor rendered.
    func line(_ i: Int) -> [UInt8] {
        if let line = lines[i] { return line }
        let line = RPCLine.event(event(i).params)
        lines[i] = line
        #if DEBUG
        DebugStats.eventLinesRendered += 1
        #endif
        return line
    }
}
