// A non-admin uid's leases, over all its connections, hold at most half of
// control.total_lease_entries (assetd.toml(5), [control]): one user's many connections, each
// within its own bound, took every entry, and every other user's lease was refused lease_limit
// for as long as they stayed open.

import AssetClient
import Foundation
import Testing

@Suite struct LeaseUserShareTests {
    /// Another user than nobody, with no passwd entry and not an admin.
    static let otherUID: UInt32 = 65533

    /// Opens `argv[2]` connections, leases `argv[3]` objects named `argv[4]`… on each (objects
    /// not there yet), prints each answer, then "done", and keeps the connections (and their
    /// leases) open until it is stopped.
    static let leases = """
        import json, socket, sys
        conns = []
        for c in range(int(sys.argv[2])):
            s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
            objs = [{"collection": "c", "key": "%s%d-%d" % (sys.argv[4], c, i)} for i in range(int(sys.argv[3]))]
            req = {"jsonrpc": "2.0", "id": c, "method": "lease.acquire", "params": {"objects": objs, "ttl": 600}}
            s.sendall((json.dumps(req) + "\\n").encode())
            data = b""
            while not data.endswith(b"\\n"):
                chunk = s.recv(65536)
                if not chunk: break
                data += chunk
            print(data.decode().strip() or "closed", flush=True)
            conns.append(s)
        print("done", flush=True)
        conns[0].recv(1)
        """

    static func asUser(_ uid: UInt32, _ args: [String]) throws -> BackgroundProcess {
        try BackgroundProcess(
            "/usr/bin/setpriv",
            ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", "/usr/bin/python3", "-c", leases] + args)
    }

    @Test(
        "one user's connections take half of all lease entries; another user's lease is granted",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as other users"))
    func anotherUserLeases() throws {
        let h = try DaemonHarness(
            controlSection: "mode = \"0666\"\nmax_lease_entries_per_connection = 4\ntotal_lease_entries = 8")
        // Nobody's three connections ask 4 entries each: the first fills its share of 4.
        let hog = try Self.asUser(Nobody.uid, [h.socket, "3", "4", "n"])
        defer { hog.stop() }
        #expect(hog.waitForLine { $0 == "done" }, "\(hog.output)")
        let answers = hog.output.dropLast()
        #expect(answers.count == 3 && answers.first?.contains(#""lease":"#) == true, "\(answers)")
        #expect(answers.dropFirst().allSatisfy { $0.contains("this user's leases") }, "\(answers)")
        // The other user's lease fits in what is left of the total.
        let other = try Self.asUser(Self.otherUID, [h.socket, "1", "4", "o"])
        defer { other.stop() }
        #expect(other.waitForLine { $0 == "done" }, "\(other.output)")
        #expect(other.output.first?.contains(#""lease":"#) == true, "\(other.output)")
        // The total still bounds everyone, admins too: it is full.
        let admin = try h.client()
        #expect(throws: (any Error).self) { try admin.call("lease.acquire", ["objects": [ref("c", "a")], "ttl": 600]) }
    }
}
