// Replies are written once per loop turn (docs/DESIGN.md, the control server): whatever
// produced them (a point read, a method run on the loop, the group commit, the pool, the
// query lane, an event for a watcher), each is handed to the kernel before the loop waits
// again. A reply left behind would never come: nothing else here wakes its connection.

import AssetClient
import ControlProtocol
import Foundation
import Testing

@Suite struct TurnFlushTests {
    /// A burst of every kind of request, ids from `base`; the notification has no reply.
    func burst(base: Int, key: Int) -> (text: String, ids: [Int]) {
        var lines = [String]()
        var ids = [Int]()
        func add(_ method: String, _ params: String) {
            let id = base + ids.count
            ids.append(id)
            lines.append(#"{"jsonrpc":"2.0","id":\#(id),"method":"\#(method)","params":\#(params)}"#)
        }
        for i in 0..<100 { add("object.get", #"{"collection":"f","key":"k\#((key + i) % 20)"}"#) }
        add("object.put", #"{"collection":"f","key":"w\#(key)","value":{"n":\#(key)}}"#)
        lines.append(#"{"jsonrpc":"2.0","method":"ping"}"#)
        add("object.list", #"{"collection":"f"}"#)
        add("index.query", #"{"index":"default","where":""}"#)
        add("ping", "{}")
        for i in 0..<20 { add("object.get", #"{"collection":"f","key":"k\#(i)"}"#) }
        return (lines.joined(separator: "\n") + "\n", ids)
    }

    func replyIDs(_ c: RawConnection, count: Int) -> [Int] {
        var ids = [Int]()
        for _ in 0..<count {
            guard let reply = c.readLine() else { break }
            #expect(reply["error"] == nil, "\(reply.serialized())")
            ids.append(Int(reply["id"]?.intValue ?? -1))
        }
        return ids
    }

    @Test("pipelined bursts on many connections are answered whole: loop, commit, pool and query-lane replies")
    func burstsOnManyConnectionsAnswered() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        for i in 0..<20 { try c.putObject("f", "k\(i)", ["i": .int(Int64(i))]) }
        let watcher = try h.client()
        #expect(try watcher.call("watch") == ["watching": true])
        let connections = try (0..<8).map { _ in try RawConnection(path: h.socket) }
        var expected = [[Int]]()
        // All sent before any is read: the daemon answers several connections in one turn.
        for (n, raw) in connections.enumerated() {
            raw.setReceiveTimeout(60)
            let b = burst(base: n * 1000, key: n)
            expected.append(b.ids)
            raw.send(b.text)
        }
        for (n, raw) in connections.enumerated() {
            #expect(replyIDs(raw, count: expected[n].count) == expected[n], "connection \(n)")
        }
        // Each put's event reaches the watcher, written in the turn that committed it.
        var keys = Set<String>()
        while keys.count < connections.count, let e = try? watcher.nextEvent() {
            if e["type"] == "object.put", let key = e["key"]?.stringValue, key.hasPrefix("w") { keys.insert(key) }
        }
        #expect(keys.count == connections.count)
    }

    @Test("a peer that half-closes after a burst takes every reply, then is closed")
    func halfClosedPeerAnsweredThenClosed() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        for i in 0..<20 { try c.putObject("f", "k\(i)", ["i": .int(Int64(i))]) }
        let raw = try RawConnection(path: h.socket)
        raw.setReceiveTimeout(60)
        let b = burst(base: 1, key: 3)
        raw.send(b.text)
        raw.shutdownWrite()
        #expect(replyIDs(raw, count: b.ids.count) == b.ids)
        #expect(raw.isClosedByPeer())
        #expect(try c.call("ping")["version"] != nil)
    }
}
