// A client that runs slow queries, pipelines without reading, asks for huge replies or takes
// every connection must not hurt the others (assetd(8), CONTROL PROTOCOL). Small configured
// limits keep these fast; nothing here asserts a time: the bounds in time and memory are
// measured by `assetbench hostile`.

import AssetClient
import AssetStore
import Foundation
import Testing

@Suite struct HostileClientTests {
    /// A clause that runs until the query time limit: a six-way self-join of the index.
    static let endlessClause = """
        WHERE key IN (SELECT a.key FROM index_default a, index_default b, index_default c, index_default d, \
        index_default e, index_default f WHERE a.key || b.key || c.key || d.key || e.key || f.key = 'never')
        """

    @Test("slow queries on every query thread keep no other method waiting")
    func slowQueriesStarveNothing() throws {
        let h = try DaemonHarness(controlSection: "query_threads = 2\nquery_time_limit = \"10m\"")
        let c = try h.client(timeout: 60)
        for i in 0..<40 { try c.putObject("q", "k\(i)", ["n": .int(Int64(i))]) }
        let file = try h.makeFile("kept.bin")
        try c.putObject("f", "held", ["file": .string(file)])
        // More slow queries than the thread pool had threads before they got their own lane.
        let slow = try (0..<max(8, 2 * ProcessInfo.processInfo.activeProcessorCount + 2)).map { i in
            let r = try RawConnection(path: h.socket)
            let request: JSONValue = [
                "jsonrpc": "2.0", "id": .int(Int64(i)), "method": "index.query",
                "params": ["where": .string(Self.endlessClause)],
            ]
            r.send(request.serialized() + "\n")
            return r
        }
        let lane = { () throws -> JSONValue? in try c.call("stats")["queries"] }
        #expect(try eventually(timeout: 60) { try lane()?["running"] == 2 && lane()?["queued"] == .int(Int64(slow.count - 2)) })

        // Each of these answers while both query threads stay busy.
        try c.putObject("w", "a")
        try c.putObject("w", "b")
        try c.addEdge("link", from: ref("w", "a"), to: ref("w", "b"), rules: ["deleteDestinationIfSourceDeleted"])
        #expect(try c.call("object.touch", ref("w", "b"))["commit"] != nil)
        #expect(try c.call("transact", ["ops": [["method": "object.put", "params": ["collection": "w", "key": "t", "value": [:]]]]])["commit"] != nil)
        #expect(try c.deleteObject("w", "a")["deleted"]?.refTexts == ["w/a", "w/b"])
        #expect(try c.call("object.list", ["collection": "q", "limit": 5])["keys"]?.arrayValue?.count == 5)
        #expect(try c.call("lease.acquire", ["objects": [ref("q", "k1")], "ttl": "90s"])["lease"] != nil)
        #expect(try c.call("file.get", ["path": .string(file)]) != .null)
        #expect(try c.call("sweep")["pending"] != nil)
        #expect(try c.call("pending")["pending"] != nil)
        #expect(try c.call("edge.count", ["name": "link"]) == ["count": 0])

        // The slow queries were still running all along: none has answered.
        #expect(try lane()?["running"] == 2)
        for r in slow { #expect(!r.hasBytesToRead()) }
    }
}

extension RawConnection {
    /// Whether a reply byte is waiting, without blocking.
    func hasBytesToRead() -> Bool {
        var b: UInt8 = 0
        return recv(fd, &b, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) > 0
    }
}
