// Server events (assetd(8), CONTROL PROTOCOL, Events): `watch` subscribes a connection,
// events follow a commit in order, filters by collection and type apply, and nothing is sent
// after `unwatch` or the close.

import AssetClient
import AssetStore
import ControlProtocol
import Foundation
import Testing

@Suite("events") struct EventTests {
    /// Reads events until one of type `last` arrives (or none comes within the client's timeout).
    func events(_ watcher: ControlClient, until last: String) -> [JSONValue] {
        var out: [JSONValue] = []
        while let e = try? watcher.nextEvent() {
            out.append(e)
            if e["type"] == .string(last) { break }
        }
        return out
    }

    /// "type key cause/reason path" for comparing sequences.
    func summary(_ e: JSONValue) -> String {
        var parts = [e["type"]?.stringValue ?? "?"]
        if let key = e["key"]?.stringValue { parts.append(key) }
        if let cause = e["cause"]?.stringValue { parts.append(cause) }
        if let edge = e["edge"] { parts.append(edge["name"]?.stringValue ?? "?") }
        if let reason = e["reason"]?.stringValue { parts.append(reason) }
        if let path = e["path"]?.stringValue { parts.append((path as NSString).lastPathComponent) }
        return parts.joined(separator: " ")
    }

    @Test(
        "a put and a delete raise object.put, object.deleted (request, cascade), edge.deleted, file.queued and file.unlinked in order"
    )
    func eventOrder() throws {
        let h = try DaemonHarness()
        let watcher = try h.client()
        #expect(try watcher.call("watch") == ["watching": true])
        let c = try h.client()
        let f = try h.makeFile("a.bin")
        let putCommit = try c.putObject("ev", "a", ["file": .string(f)])
        try c.putObject("ev", "b")
        try c.putObject("ev", "c")
        try c.addEdge("child", from: ref("ev", "a"), to: ref("ev", "b"), rules: ["deleteDestinationIfSourceDeleted"])
        try c.addEdge("watching", from: ref("ev", "c"), to: ref("ev", "a"), rules: ["notifyIfDestinationDeleted"])
        let deletion = try c.deleteObject("ev", "a")
        let deleteCommit = try #require(deletion["commit"])

        let seen = events(watcher, until: "file.unlinked")
        #expect(
            seen.map(summary) == [
                "object.put a", "object.put b", "object.put c",
                "object.deleted a request", "object.deleted b cascade",
                "edge.deleted watching destinationDeleted",
                "file.queued a.bin", "file.unlinked a.bin",
            ])
        #expect(seen.first?["commit"] == .int(putCommit))
        #expect(seen.first?["collection"] == "ev")
        for e in seen.dropFirst(3).dropLast() { #expect(e["commit"] == deleteCommit, "\(e.serialized())") }
        let notify = try #require(seen.first { $0["type"] == "edge.deleted" })
        #expect(notify["edge"]?["source"] == ref("ev", "c"))
        #expect(notify["edge"]?["destination"] == ref("ev", "a"))
        #expect(notify["node"] == ref("ev", "c"), "the surviving node is the one notified")
        #expect(seen.last?["path"] == .string(f))
    }

    @Test("edge.remove with a reason notifies the surviving node once, with that reason")
    func notifyOnEdgeRemove() throws {
        let h = try DaemonHarness()
        let watcher = try h.client()
        try watcher.call("watch", ["types": ["edge.deleted"]])
        let c = try h.client()
        for k in ["s", "d"] { try c.putObject("n", k) }
        try c.addEdge("tell", from: ref("n", "s"), to: ref("n", "d"), rules: ["notifyIfSourceDeleted"])
        try c.call(
            "edge.remove",
            ["name": "tell", "source": ref("n", "s"), "destination": ref("n", "d"), "reason": "sourceDeleted"])
        let e = try #require(try watcher.nextEvent())
        #expect(e["type"] == "edge.deleted")
        #expect(e["reason"] == "sourceDeleted")
        #expect(e["edge"]?["name"] == "tell")
        #expect(e["node"] == ref("n", "d"))
    }

    @Test(
        "watch filters by collection: object events by their collection, edge events by either end, file events always")
    func collectionFilter() throws {
        let h = try DaemonHarness()
        let watcher = try h.client()
        try watcher.call("watch", ["collections": ["wanted"]])
        let c = try h.client()
        let f = try h.makeFile("x.bin")
        try c.putObject("other", "o1", ["file": .string(f)])
        try c.putObject("wanted", "w1")
        try c.putObject("other", "o2")
        try c.addEdge("tell", from: ref("other", "o2"), to: ref("wanted", "w1"), rules: ["notifyIfDestinationDeleted"])
        try c.deleteObject("wanted", "w1")
        try c.deleteObject("other", "o1")
        let seen = events(watcher, until: "file.unlinked")
        #expect(
            seen.map(summary) == [
                "object.put w1", "object.deleted w1 request", "edge.deleted tell destinationDeleted",
                "file.queued x.bin", "file.unlinked x.bin",
            ])
    }

    @Test("watch filters by type")
    func typeFilter() throws {
        let h = try DaemonHarness()
        let watcher = try h.client()
        try watcher.call("watch", ["types": ["object.deleted", "file.unlinked"]])
        let c = try h.client()
        let f = try h.makeFile("t.bin")
        try c.putObject("t", "a", ["file": .string(f)])
        try c.putObject("t", "b")
        try c.deleteObject("t", "b")
        try c.deleteObject("t", "a")
        let seen = events(watcher, until: "file.unlinked")
        #expect(seen.map(summary) == ["object.deleted b request", "object.deleted a request", "file.unlinked t.bin"])
    }

    @Test("a new watch replaces the filter of the one before")
    func rewatch() throws {
        let h = try DaemonHarness()
        let watcher = try h.client()
        try watcher.call("watch", ["types": ["object.deleted"]])
        try watcher.call("watch", ["types": ["object.put"]])
        let c = try h.client()
        try c.putObject("r", "a")
        try c.deleteObject("r", "a")
        try c.putObject("r", "b")
        let seen = [try watcher.nextEvent(), try watcher.nextEvent()].compactMap { $0 }
        #expect(seen.map(summary) == ["object.put a", "object.put b"])
    }

    @Test("after unwatch no event is sent; a connection that never watched gets none")
    func unwatch() throws {
        let h = try DaemonHarness()
        let raw = try RawConnection(path: h.socket)
        let quiet = try RawConnection(path: h.socket)
        raw.send(#"{"jsonrpc":"2.0","id":1,"method":"watch"}"# + "\n")
        #expect(raw.readLine()?["result"] == ["watching": true])
        let c = try h.client()
        try c.putObject("u", "before")
        let event = raw.readLine()
        #expect(event?["method"] == "event")
        #expect(event?["params"]?["key"] == "before")

        raw.send(#"{"jsonrpc":"2.0","id":2,"method":"unwatch"}"# + "\n")
        #expect(raw.readLine()?["id"] == 2)
        try c.putObject("u", "after")
        try c.deleteObject("u", "after")
        // A put's reply is written after its events were queued: the next line must be the ping's.
        raw.send(#"{"jsonrpc":"2.0","id":3,"method":"ping"}"# + "\n")
        let next = raw.readLine()
        #expect(next?["id"] == 3, "no event after unwatch: \(next?.serialized() ?? "nothing")")
        quiet.send(#"{"jsonrpc":"2.0","id":1,"method":"ping"}"# + "\n")
        #expect(quiet.readLine()?["id"] == 1, "a connection that never watched gets only its reply")
    }

    @Test("a watcher's events end with its connection; others go on")
    func watcherCloses() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        for _ in 0..<3 {
            let watcher = try h.client()
            try watcher.call("watch")
            watcher.close()
        }
        let other = try h.client()
        try other.call("watch", ["types": ["object.put"]])
        for i in 0..<20 { try c.putObject("w", "k\(i)") }
        #expect(try other.nextEvent()?["key"] == "k0")
        #expect(eventually { (try? c.call("stats")["connections"]) == 2 }, "the closed watchers are gone")
        #expect(h.isRunning)
    }
}
