// One version, reported everywhere: assetd --version, assetctl --version, and ping over the
// socket and in-process (assetd(8), assetctl(1)).

import AssetClient
@testable import AssetDaemon
import AssetStore
import ControlProtocol
import Foundation
import Testing

@Suite struct VersionTests {
    @Test("assetd --version and assetctl --version print the same version")
    func commandLines() throws {
        let daemon = try runAssetd(["--version"])
        #expect(daemon.status == 0, "\(daemon.stderr)")
        #expect(daemon.stdout == Version.product + "\n")
        let ctl = try runProcess(Binaries.assetctl, ["--version"])
        #expect(ctl.status == 0, "\(ctl.stderr)")
        #expect(ctl.stdout == Version.product + "\n")
    }

    @Test("ping reports the version, the protocol and the last commit, from the daemon and with --db")
    func ping() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        let put = try c.call("object.put", ["collection": "c", "key": "k", "value": ["n": 1]])
        let ping = try c.call("ping")
        #expect(ping["version"] == .string(Version.product))
        #expect(ping["protocol"] == .int(Int64(Version.controlProtocol)))
        #expect(ping["commit"] == put["commit"])
        let offline = try runProcess(
            Binaries.assetctl, ["--db", h.database, "--config", h.configPath, "--json", "ping"])
        #expect(offline.status == 0, "\(offline.stderr)")
        #expect(try JSONValue.parse(offline.stdout) == ping, "in-process, the store is asked")
        let human = try h.assetctl("ping")
        #expect(human.stdout.contains(Version.product) && human.stdout.contains("protocol"), "\(human.stdout)")
    }

    @Test("each method declares how the daemon runs it; touches are point reads on the loop")
    func executions() {
        let table = MethodTable.methods
        #expect(table["ping"]?.execution == .loop)
        #expect(table["object.put"]?.execution == .groupCommit)
        #expect(table["object.get"]?.execution == .pointRead)
        #expect(table["object.touch"]?.execution == .pointRead)
        #expect(table["index.query"]?.execution == .queryLane)
        #expect(table["verify"]?.execution == .maintenance)
        #expect(table.filter { $0.value.needsDaemon }.keys.sorted() == ["shutdown", "unwatch", "watch"])
        // On the loop only what costs the same whatever clients hold: a lease.list page may walk
        // every lease (the ownership filter refusing most of them), so it runs on the pool.
        #expect(table.filter { $0.value.execution == .loop }.keys.sorted() == ["ping", "shutdown", "unwatch", "watch"])
    }
}
