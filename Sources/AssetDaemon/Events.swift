// Server events (assetd(8), CONTROL PROTOCOL, Events) made from what a commit or a sweep did, with
// the collections each event concerns so watch filters can apply: object events by the object's
// collection, edge events by either end's, file events unfiltered by collection.

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

    /// Events for a commit: puts, deletions (with cause), notifications, queued files.
    public static func events(for r: CommitReport) -> [ServerEvent] {
        var out = [ServerEvent]()
        let commit = JSONValue.int(r.commit)
        for ref in r.put {
            out.append(
                make(
                    "object.put", [ref.collection],
                    ["commit": commit, "collection": .string(ref.collection), "key": .string(ref.key)]))
        }
        for d in r.deleted {
            out.append(
                make(
                    "object.deleted", [d.ref.collection],
                    [
                        "commit": commit, "collection": .string(d.ref.collection), "key": .string(d.ref.key),
                        "cause": .string(d.cause.rawValue),
                    ]))
        }
        for n in r.notifications {
            var collections = [n.edge.source.collection]
            if case .object(let d) = n.edge.destination { collections.append(d.collection) }
            var fields: [String: JSONValue] = [
                "commit": commit, "edge": n.edge.json, "reason": .string(n.reason.rawValue), "node": n.node.json,
            ]
            if let field = n.nullifiedField { fields["nullified"] = .string(field) }
            out.append(make("edge.deleted", collections, fields))
        }
        for path in r.filesQueued { out.append(make("file.queued", nil, ["commit": commit, "path": .string(path)])) }
        return out
    }

    /// Events for a sweep: unlinked, failed, skipped and deferred files.
    public static func events(for s: SweepReport, commit: Int64) -> [ServerEvent] {
        var out = [ServerEvent]()
        let c = JSONValue.int(commit)
        for path in s.unlinked { out.append(make("file.unlinked", nil, ["commit": c, "path": .string(path)])) }
        for f in s.failed {
            out.append(
                make(
                    "file.unlink_failed", nil,
                    [
                        "commit": c, "path": .string(f.path), "error": .string(f.error),
                        "attempts": .int(Int64(f.attempts)),
                    ]))
        }
        let notTaken = Dictionary(s.lookNotTaken, uniquingKeysWith: { a, _ in a })
        for k in s.skipped {
            var fields: [String: JSONValue] = [
                "commit": c, "path": .string(k.path), "reason": .string(k.reason.rawValue),
            ]
            // Kept because its owed look could not vouch for the file there: said apart.
            if let why = notTaken[k.path] { fields["why"] = .string(why) }
            out.append(make("file.unlink_skipped", nil, fields))
        }
        // Kept for now and retried later (open, or leased): same type, told apart by `deferred`.
        for d in s.deferred {
            out.append(
                make(
                    "file.unlink_skipped", nil,
                    [
                        "commit": c, "path": .string(d.path), "reason": .string(d.reason.rawValue), "deferred": true,
                    ]))
        }
        return out
    }
}

/// A broadcast's events, each line rendered the first time a watcher takes it and shared by
/// every watcher that takes it after: rendered per watcher, 255 watchers of one transact of
/// 14,000 puts cost the loop 3.6 million renders, seconds in which no client was answered.
/// Lives for one broadcast; a class, so a watcher reads the events while lines are added.
final class EventLines {
    /// The events, in commit order.
    let events: [ServerEvent]
    private var lines: [[UInt8]?]

    init(_ events: [ServerEvent]) {
        self.events = events
        lines = Array(repeating: nil, count: events.count)
    }

    /// The line of event `i`; an event no watcher takes is never rendered.
    func line(_ i: Int) -> [UInt8] {
        if let line = lines[i] { return line }
        let line = RPCLine.event(events[i].params)
        lines[i] = line
        #if DEBUG
        DebugStats.eventLinesRendered += 1
        #endif
        return line
    }
}
