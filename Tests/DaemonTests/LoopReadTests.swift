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
