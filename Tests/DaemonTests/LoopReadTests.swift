// object.get answered on the loop over a snapshot kept for the loop turn: it sees what other
// connections were told is committed, and the daemon lets go of the snapshot when the turn
// ends, so a checkpoint can empty the WAL. Touches run there too, from the row they read.

import AssetClient
import AssetStore
import ControlProtocol
import Foundation
import Testing

@Suite struct LoopReadTests {
    @Test("object.get sees each put acknowledged on another connection, through many rounds")
    func getSeesOtherConnectionsPuts() throws {
        let h = try DaemonHarness()
        let writer = try h.client()
        let reader = try h.client()
        for i in 0..<200 {
            try writer.putObject("r", "k", ["i": .int(Int64(i))])
            #expect(try reader.getObject("r", "k")["value"]?["i"] == .int(Int64(i)))
            if i % 10 == 0 {
                try writer.putObject("r", "n\(i)", [:])
                #expect(try reader.getObject("r", "n\(i)").isNull == false)
            }
        }
    }

    @Test("point reads pipelined in one write: a refused one and a notification leave nothing in the replies")
    func pipelinedPointReadsReplyCleanly() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        try c.putObject("q", "k", ["v": 1])
        let raw = try RawConnection(path: h.socket)
        // Read in one go and answered in one pump: each reply is rendered into the same output
        // buffer, and what a refused read or a notification began there is taken back.
        raw.send(
            [
                #"{"jsonrpc":"2.0","method":"object.get","params":{"collection":"q","key":"k"}}"#,
                #"{"jsonrpc":"2.0","id":1,"method":"object.get","params":{"collection":"q","key":"k","touch":1}}"#,
                #"{"jsonrpc":"2.0","id":2,"method":"object.get","params":{"collection":"q","key":"k"}}"#,
                #"{"jsonrpc":"2.0","method":"object.get","params":{"collection":"q","key":"k","touch":true}}"#,
                #"{"jsonrpc":"2.0","id":3,"method":"object.get","params":{"collection":"q","key":"missing"}}"#,
                #"{"jsonrpc":"2.0","id":4,"method":"object.touch","params":{"collection":"q","key":"missing"}}"#,
                #"{"jsonrpc":"2.0","id":5,"method":"object.get","params":{"collection":"q","key":"k"}}"#,
            ].joined(separator: "\n") + "\n")
        let replies = (1...5).compactMap { _ in raw.readLine() }
        #expect(replies.map { $0["id"] } == [1, 2, 3, 4, 5])
        #expect(replies[0]["error"]?["code"] == .int(Int64(Code.invalidParams)), "\(replies[0].serialized())")
        #expect(replies[1]["result"]?["value"] == ["v": 1])
        #expect(replies[2]["result"] == .null)
        #expect(replies[3]["error"]?["data"]?["code"] == "not_found", "\(replies[3].serialized())")
        #expect(replies[4]["result"]?["value"] == ["v": 1])
        #expect(try c.call("ping")["version"] != nil)
    }

    @Test("after gets, the loop holds no snapshot: a checkpoint empties the WAL at once")
    func loopReleasesSnapshot() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        for i in 0..<50 { try c.putObject("w", "k\(i)", ["i": .int(Int64(i))]) }
        for i in 0..<50 { _ = try c.getObject("w", "k\(i)") }
        // A snapshot left open keeps the truncating checkpoint from emptying the WAL.
        #expect(try c.call("checkpoint")["emptied"] == true)
        let wal = try FileManager.default.attributesOfItem(atPath: h.database + "-wal")[.size] as? Int
        #expect(wal == 0)
    }

    @Test("object.get params: touch of a wrong type is -32602 on both paths; touch null and extra params are ignored")
    func fastGetParams() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        try c.putObject("p", "k", ["v": 1])
        expectRPCError(Code.invalidParams) { () throws(ClientError) in
            try c.call("object.get", ["collection": "p", "key": "k", "touch": "yes"])
        }
        expectRPCError(Code.invalidParams) { () throws(ClientError) in
            try c.call("object.get", ["collection": "p", "key": "k", "touch": 1])
        }
        expectRPCError(Code.invalidParams) { () throws(ClientError) in try c.call("object.get", ["collection": "p"]) }
        let plain = try c.call("object.get", ["collection": "p", "key": "k"])
        #expect(try c.call("object.get", ["collection": "p", "key": "k", "touch": .null, "extra": 1]) == plain)
        #expect(try c.call("object.get", ["collection": "p", "key": "k", "touch": false]) == plain)
    }

    @Test("touches on the loop: each reply shows the touch before it; a missing object is not_found or null")
    func touchesOnLoop() throws {
        let h = try DaemonHarness(storeSection: #"access_flush = "1h""#)
        let c = try h.client()
        try c.putObject("t", "k", ["v": 1])
        var last = try #require(c.getObject("t", "k")["accessed"]?.doubleValue)
        for i in 0..<3 {
            passClock(last)
            if i % 2 == 0 {
                _ = try c.call("object.touch", ["collection": "t", "key": "k"])
                let now = try #require(c.getObject("t", "k")["accessed"]?.doubleValue)
                #expect(now > last, "object.touch moved accessed")
                last = now
            } else {
                let got = try c.call("object.get", ["collection": "t", "key": "k", "touch": true])
                let now = try #require(got["accessed"]?.doubleValue)
                #expect(now > last, "the touching get's own reply shows its touch")
                #expect(got["value"] == ["v": 1])
                last = now
            }
        }
        #expect(try c.call("stats")["access"]?["touches"] == 3)
        expectRPCError(Code.application, "not_found") { () throws(ClientError) in
            try c.call("object.touch", ["collection": "t", "key": "missing"])
        }
        #expect(try c.call("object.get", ["collection": "t", "key": "missing", "touch": true]) == .null)
    }
}
