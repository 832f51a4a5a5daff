// Many edges over the socket. object.get of an object with more file edges than the loop reads
// (Store+FileList.swift) runs on the pool: held there (ASSETD_DEBUG_HOLD_POOL_JOB, debug
// builds), the loop meanwhile answers a bystander's ping and an ordinary get; its reply lists
// the file once. file.get of a file with many edges stops at control.max_reply_bytes: refused
// from the count of its edges when more than could fit, else after reading about the limit's
// worth of them (debug stats `edge_rows_read`), not all.

import AssetClient
import AssetStore
import Foundation
import Glibc
import Testing

#if DEBUG
@Suite struct ManyEdgesSocketTests {
    /// `count` edge.add ops from c/`key` to the file at `path`, named n`first`…, the first
    /// `retaining` of them with the rule that retains the file.
    private func edgeOps(_ key: String, _ path: String, _ count: Int, first: Int = 0, retaining: Int = 0) -> JSONValue {
        var ops = [JSONValue]()
        for i in first..<first + count {
            let rules: JSONValue = i - first < retaining ? ["deleteDestinationIfAllSourcesDeleted"] : []
            let source: JSONValue = ["collection": "c", "key": .string(key)]
            let params: JSONValue = [
                "name": .string("n\(i)"), "source": source, "destination": ["file": .string(path)], "rules": rules,
            ]
            ops.append(["method": "edge.add", "params": params])
        }
        return ["ops": .array(ops)]
    }

    /// Whether a line (or part of one) waits on `raw`, without waiting for one.
    private func waiting(_ raw: RawConnection) -> Bool {
        var byte: UInt8 = 0
        return recv(raw.fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) > 0
    }

    @Test("object.get of an object with 500 edges to one file runs on the pool: ping and other gets answered meanwhile")
    func manyEdgedGetLeavesTheLoop() throws {
        let h = try DaemonHarness(start: false)
        let hold = h.dir + "/hold-pool-job"
        h.environment = ["ASSETD_DEBUG_HOLD_POOL_JOB": hold]
        try h.start()
        let c = try h.client()
        let path = try h.makeFile("one.bin")
        for key in ["many", "few"] {
            _ = try c.call("object.put", ["collection": "c", "key": .string(key), "value": [:]])
        }
        _ = try c.call("transact", edgeOps("many", path, 500))
        _ = try c.call("transact", edgeOps("few", path, 2))
        let before = try c.call("object.get", ["collection": "c", "key": "many"])["accessed"]?.doubleValue

        #expect(FileManager.default.createFile(atPath: hold, contents: nil))
        let getter = try RawConnection(path: h.socket)
        getter.send(
            #"{"jsonrpc":"2.0","id":1,"method":"object.get","params":{"collection":"c","key":"many","touch":true}}"#
                + "\n")
        #expect(eventually { h.exists(hold + ".held") }, "the get of the many-edged object waits on the pool")
        // The loop is free: a bystander's ping, and a get of an object with few edges (on the loop).
        #expect(try c.call("ping")["commit"] != nil)
        let few = try c.call("object.get", ["collection": "c", "key": "few"])
        #expect(few["files"]?.arrayValue?.compactMap { $0["path"]?.stringValue } == [path])
        #expect(!waiting(getter), "the held get is not answered yet")

        try FileManager.default.removeItem(atPath: hold)
        let reply = try #require(getter.readLine())
        #expect(reply["id"] == 1)
        let object = try #require(reply["result"])
        #expect(object["files"]?.arrayValue?.compactMap { $0["path"]?.stringValue } == [path], "the file once")
        #expect((object["accessed"]?.doubleValue ?? 0) >= (before ?? .infinity), "the touch is shown")
        // Read again without the hold: the same object (the touch recorded once, not changed since).
        let again = try c.call("object.get", ["collection": "c", "key": "many"])
        #expect(again == object)
    }

    @Test("file.get past max_reply_bytes: refused from the count, or after a limit's worth of rows")
    func fileGetStopsAtTheReplyLimit() throws {
        let h = try DaemonHarness(controlSection: #"max_reply_bytes = "64KiB""#, start: false)
        h.environment = ["ASSETD_DEBUG_STATS": "1"]
        try h.start()
        let c = try h.client()
        let path = try h.makeFile("one.bin")
        _ = try c.call("object.put", ["collection": "c", "key": "s", "value": [:]])
        // 3,000 edges (about 110 bytes each as JSON: 330 KB), two of them retaining.
        for start in stride(from: 0, to: 3_000, by: 500) {
            _ = try c.call("transact", edgeOps("s", path, 500, first: start, retaining: start == 0 ? 2 : 0))
        }
        let rowsRead = { try c.call("stats")["debug"]?["edge_rows_read"]?.intValue ?? -1 }
        let before = try rowsRead()
        let refused = expectRPCError(Code.application, "reply_too_large") { () throws(ClientError) in
            try c.call("file.get", ["path": .string(path)])
        }
        #expect(refused?.message.contains("edge.find by destination") == true, "\(String(describing: refused))")
        // More edges than could fit 64 KiB at 64 bytes each: refused from the index's count,
        // before any edge row is read.
        #expect(try rowsRead() - before == 0, "edge rows read of 3,000 before the refusal")

        // Fewer than that, but too many as rendered (about 110 bytes each): read one at a time,
        // refused at most one row past the limit.
        let fewer = try h.makeFile("fewer.bin")
        for start in stride(from: 0, to: 1_000, by: 500) {
            _ = try c.call("transact", edgeOps("s", fewer, 500, first: start, retaining: 0))
        }
        let before2 = try rowsRead()
        _ = expectRPCError(Code.application, "reply_too_large") { () throws(ClientError) in
            try c.call("file.get", ["path": .string(fewer)])
        }
        let read = try rowsRead() - before2
        #expect(read > 0 && read <= 1_000, "\(read) edge rows read of 1,000")

        // A file with few edges is answered whole, in id order, with its retaining edges counted.
        let other = try h.makeFile("two.bin")
        _ = try c.call("transact", edgeOps("s", other, 3, retaining: 3))
        let report = try c.call("file.get", ["path": .string(other)])
        #expect(report["edges"]?.arrayValue?.compactMap { $0["name"]?.stringValue } == ["n0", "n1", "n2"])
        #expect(report["retained_by"] == 3)
        #expect(report["file"]?["path"]?.stringValue == other)
    }
}
#endif
