// The put pipeline under load and at a stop: a shutdown request or SIGTERM while many
// connections' puts are queued answers every put exactly once and keeps every acknowledged
// put; puts beside pool writers all get answers.

import AssetClient
import AssetStore
import ControlProtocol
import Foundation
import Synchronization
import Testing

@Suite(.serialized) struct PutPipelineStopTests {
    /// `connections` raw connections each pipelining `perConnection` puts; then `stop` runs.
    /// Reads every connection to its end (no id may be answered twice); returns the keys of
    /// the puts answered with a result. (Puts not yet read when it stops get no answer.)
    func putsThenStop(
        _ h: DaemonHarness, connections: Int, perConnection: Int, stop: () -> Void
    ) throws
        -> (acked: [String], answers: [Int: Int])
    {
        var raws = [RawConnection]()
        for c in 0..<connections {
            let raw = try RawConnection(path: h.socket)
            var lines = [UInt8]()
            for i in 0..<perConnection {
                lines += Array(
                    #"{"jsonrpc":"2.0","id":\#(i),"method":"object.put","params":{"collection":"s","key":"c\#(c)-\#(i)","value":{"i":\#(i)}}}"#
                        .utf8)
                lines.append(10)
            }
            raw.send(lines)
            raws.append(raw)
        }
        _ = raws[0].readLine()
        stop()
        var acked = [String]()
        var answers = [Int: Int]()
        for (c, raw) in raws.enumerated() {
            var seen = [Int: Int]()
            while let line = raw.readLine() {
                guard let id = line["id"]?.intValue else { continue }
                seen[Int(id), default: 0] += 1
                if line["result"] != nil { acked.append("c\(c)-\(id)") }
            }
            for (_, n) in seen where n > 1 { Issue.record("connection \(c): an id answered \(n) times") }
            answers[c] = seen.count
        }
        return (acked, answers)
    }

    @Test("a shutdown request while many puts are queued: every put answered once, acknowledged ones stored")
    func shutdownRequestMidPuts() throws {
        let h = try DaemonHarness()
        let admin = try RawConnection(path: h.socket)
        let r = try putsThenStop(h, connections: 8, perConnection: 200) {
            admin.send(#"{"jsonrpc":"2.0","id":1,"method":"shutdown"}"# + "\n")
        }
        #expect(h.stop(signal: 0) == 0)  // waits: it stops by itself
        try h.start()
        let c = try h.client()
        let keys = Set(try c.call("object.list", ["collection": "s", "limit": 10000])["keys"]?.strings ?? [])
        #expect(Set(r.acked).isSubset(of: keys), "acknowledged but missing: \(Set(r.acked).subtracting(keys).count)")
    }

    @Test("SIGTERM while many puts are queued: assetd stops cleanly, acknowledged ones stored")
    func sigtermMidPuts() throws {
        let h = try DaemonHarness()
        let r = try putsThenStop(h, connections: 8, perConnection: 200) {
            kill(h.process!.processIdentifier, SIGTERM)
        }
        #expect(h.stop(signal: 0) == 0)  // waits: the first SIGTERM stops it
        try h.start()
        let c = try h.client()
        let keys = Set(try c.call("object.list", ["collection": "s", "limit": 10000])["keys"]?.strings ?? [])
        #expect(Set(r.acked).isSubset(of: keys), "acknowledged but missing: \(Set(r.acked).subtracting(keys).count)")
    }
}

@Suite struct PutPipelineConcurrencyTests {
    @Test("puts alongside transacts, deletes and checkpoints on the pool: everything answered, nothing hangs")
    func putsWithPoolWriters() throws {
        let h = try DaemonHarness()
        let done = Mutex(0)
        let failures = Mutex([String]())
        var threads = [Thread]()
        for t in 0..<6 {
            let socket = h.socket
            let thread = Thread {
                guard let c = try? ControlClient(socketPath: socket, timeout: 60) else { return }
                for i in 0..<150 {
                    do {
                        switch t % 3 {
                        case 0:
                            _ = try c.call(
                                "object.put",
                                ["collection": "p", "key": .string("t\(t)-\(i)"), "value": ["i": .int(Int64(i))]])
                        case 1:
                            _ = try c.call(
                                "transact",
                                [
                                    "ops": [
                                        [
                                            "method": "object.put",
                                            "params": [
                                                "collection": "x", "key": .string("t\(t)-\(i)"), "value": ["a": 1],
                                            ],
                                        ],
                                        [
                                            "method": "object.delete",
                                            "params": ["collection": "x", "key": .string("t\(t)-\(i)")],
                                        ],
                                        [
                                            "method": "object.put",
                                            "params": [
                                                "collection": "x", "key": .string("t\(t)-\(i)"), "value": ["a": 2],
                                            ],
                                        ],
                                    ]
                                ])
                        default:
                            if i % 10 == 0 {
                                _ = try c.call("checkpoint")
                            } else {
                                _ = try c.call(
                                    "object.put", ["collection": "q", "key": .string("t\(t)-\(i)"), "value": ["i": 1]])
                                _ = try c.call("object.delete", ["collection": "q", "key": .string("t\(t)-\(i)")])
                            }
                        }
                    } catch {
                        failures.withLock { $0.append("\(t)/\(i): \(error)") }
                    }
                }
                done.withLock { $0 += 1 }
            }
            thread.start()
            threads.append(thread)
        }
        let deadline = Date().addingTimeInterval(120)
        while done.withLock({ $0 }) < 6 && Date() < deadline { usleep(50_000) }
        #expect(done.withLock { $0 } == 6, "clients still waiting: a hang")
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 }.prefix(5))")
        let c = try h.client()
        let v = try c.call("verify")
        #expect(v["clean"] == true, "\(v)")
        #expect(h.stop() == 0)
    }
}
