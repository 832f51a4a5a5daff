// Over the socket: a non-admin's put of an object its uid leases, counted against its quota
// (it leaves the group commit for its uid's turn on the pool), is refused past the quota;
// the same put by a user with no quota is not counted. Counted only in process before, a
// put through the group commit skipped the count.

@testable import AssetDaemon
import AssetClient
import ControlProtocol
import JSON
import Foundation
import Testing

@Suite(.serialized) struct LeasedWriteRoutingTests {
    /// One connection to argv[1]: sends each later argument as a line, printing each reply,
    /// then "done".
    static let session = """
        import socket, sys
        s = socket.socket(socket.AF_UNIX); s.settimeout(60); s.connect(sys.argv[1])
        f = s.makefile("rb")
        for line in sys.argv[2:]:
            s.sendall(line.encode() + b"\\n")
            print(f.readline().decode().strip(), flush=True)
        print("done", flush=True)
        """

    private static func line(_ id: Int, _ method: String, _ params: JSONValue) -> String {
        let request: JSONValue = ["jsonrpc": "2.0", "id": .int(Int64(id)), "method": .string(method), "params": params]
        return request.serialized()
    }

    /// Nobody's put of o with a.bin (100 bytes), its lease of o, a put of o with c.bin
    /// (200), over one connection; the replies.
    private static func run(_ h: DaemonHarness) throws -> [String] {
        let folder = h.root + "/nobody"
        let a = try h.makeFile("nobody/a.bin", size: 100)
        let c = try h.makeFile("nobody/c.bin", size: 200)
        for path in [folder, a, c] { #expect(chown(path, Nobody.uid, Nobody.uid) == 0) }
        let lines = [
            line(1, "object.put", ["collection": "c", "key": "o", "value": ["file": .string(a)]]),
            line(2, "lease.acquire", ["objects": [["collection": "c", "key": "o"]], "ttl": "1h"]),
            line(3, "object.put", ["collection": "c", "key": "o", "value": ["file": .string(c)]]),
        ]
        let p = try BackgroundProcess(
            "/usr/bin/setpriv",
            [
                "--reuid=\(Nobody.uid)", "--regid=\(Nobody.uid)", "--clear-groups", "/usr/bin/python3", "-c", session,
                h.socket,
            ] + lines)
        #expect(p.waitForLine { $0 == "done" }, "\(p.output)")
        p.stop()
        return p.output
    }

    @Test(
        "a leaseholder's put past its quota is refused over the socket",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as nobody"))
    func refused() throws {
        let h = try DaemonHarness(
            extraConfig: "[policy]\n[[policy.quota]]\nowner = \"nobody\"\nmax_bytes = 150\n",
            controlSection: "mode = \"0666\"\nenforce_ownership = true")
        let out = try Self.run(h)
        #expect(out.count == 4 && out[0].contains("\"result\"") && out[1].contains("\"result\""), "\(out)")
        #expect(out.count > 2 && out[2].contains("lease_limit"), "\(out)")
        let value = try h.client().getObject("c", "o")["value"]
        #expect(value?["file"]?.stringValue?.hasSuffix("/a.bin") == true)
    }

    @Test(
        "without a quota the same put goes through",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as nobody"))
    func noQuota() throws {
        let h = try DaemonHarness(controlSection: "mode = \"0666\"\nenforce_ownership = true")
        let out = try Self.run(h)
        #expect(out.count == 4 && out.prefix(3).allSatisfy { $0.contains("\"result\"") }, "\(out)")
        let value = try h.client().getObject("c", "o")["value"]
        #expect(value?["file"]?.stringValue?.hasSuffix("/c.bin") == true)
    }
}
