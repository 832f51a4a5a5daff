// A failed fdatasync of the WAL in a running assetd (assetd.toml(5), [store] durability:
// nothing acknowledged is lost, no file goes before its deleting commit is durable). Debug
// builds of assetd fail the next WAL sync when the file ASSETD_DEBUG_FAIL_WAL_SYNC names
// exists; release builds ignore it.

import AssetClient
import ControlProtocol
import Foundation
import Testing

#if DEBUG
@Suite struct FailedSyncTests {
    @Test(
        "after a failed WAL sync: the write fails unsynced, later ones are refused, reads go on, one critical line, no unlink and no sweep retried every second; a restart recovers"
    )
    func failedSyncInDaemon() throws {
        // The unlink is due a second after the delete: by then the failure is recorded, so no
        // sweep can race the delete's own sync to the failpoint.
        let h = try DaemonHarness(filesSection: #"unlink_delay = "1s""#, start: false)
        let trigger = h.dir + "/fail-next-sync"
        h.environment = ["ASSETD_DEBUG_FAIL_WAL_SYNC": trigger]
        try h.start()
        let c = try h.client()
        let f = try h.makeFile("a.bin")
        _ = try c.putObject("fs", "a", ["file": .string(f)])
        #expect(try c.call("stats")["wal"]?["sync_failure"] == nil)
        #expect(try Exposition(h.assetctl("stats", "--prometheus").stdout).value("assetd_writes_refused") == 0)

        #expect(FileManager.default.createFile(atPath: trigger, contents: nil))
        let unsynced = rpcError { _ = try c.deleteObject("fs", "a") }
        #expect(unsynced?.message.contains("could not be synced") == true, "\(String(describing: unsynced))")
        #expect(!h.exists(trigger), "the failpoint was reached")

        let refused = rpcError { _ = try c.putObject("fs", "b") }
        #expect(refused?.message.contains("restart assetd") == true, "\(String(describing: refused))")
        #expect(try c.call("object.get", ["collection": "fs", "key": "b"]) == .null)
        #expect(try c.call("ping")["commit"] != nil)
        // Monitoring sees it: stats, and the Prometheus gauge an alert can watch.
        let failure = try c.call("stats")["wal"]?["sync_failure"]?.stringValue
        #expect(failure?.contains("EIO") == true, "\(String(describing: failure))")
        #expect(try Exposition(h.assetctl("stats", "--prometheus").stdout).value("assetd_writes_refused") == 1)

        // Three sweep ticks, two with the file due: the delete's commit is not known to be on
        // disk, so the file stays, and the sweep is not tried (it could only fail, every second).
        sleep(3)
        #expect(h.exists(f))
        let log = h.log
        #expect(
            log.components(separatedBy: "writes are refused, and unlinks and policy runs wait").count == 2, "\(log)")
        #expect(!log.contains("sweep failed"), "\(log)")
        #expect(h.stop() == 0)

        // The sync only reported a failure: the delete is on disk, and a restart finishes it.
        h.environment = [:]
        try h.start()
        let d = try h.client()
        #expect(try d.call("object.get", ["collection": "fs", "key": "a"]) == .null)
        let deadline = Date().addingTimeInterval(60)
        while h.exists(f) && Date() < deadline { usleep(50_000) }
        #expect(!h.exists(f))
        _ = try d.putObject("fs", "c")
        #expect(h.stop() == 0)
    }

    /// The error a call was answered with, if it was answered with one.
    private func rpcError(_ call: () throws -> Void) -> RPCError? {
        do {
            try call()
        } catch let ClientError.rpc(e) {
            return e
        } catch {
            Issue.record("not an error reply: \(error)")
        }
        return nil
    }
}
#endif
