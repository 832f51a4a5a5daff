// Who may do what on the control socket (assetd(8), CONTROL PROTOCOL, Access): the
// socket's mode, admin-only methods, owners from peer credentials, enforce_ownership and
// admin_uids, and their reload on SIGHUP. The tests that act as `nobody` need root;
// without it they are skipped, not passed.

import AssetClient
import AssetStore
import ControlProtocol
import Foundation
import Testing

@Suite("access") struct AccessTests {
    @Test(
        "the socket file is created with control.mode",
        arguments: [(nil, 0o660), ("0600", 0o600), ("0666", 0o666)] as [(String?, Int)])
    func socketMode(mode: String?, expected: Int) throws {
        let h = try DaemonHarness(controlSection: mode.map { "mode = \"\($0)\"" } ?? "")
        #expect(
            permissions(of: h.socket) == mode_t(expected), "got \(String(permissions(of: h.socket) ?? 0, radix: 8))")
    }

    /// The daemon's reply to one request line sent as `nobody` (python3 is the raw client).
    func rawCallAsNobody(_ h: DaemonHarness, _ line: String) throws -> JSONValue? {
        let script = """
            import socket, sys
            s = socket.socket(socket.AF_UNIX)
            s.connect(sys.argv[1])
            s.sendall(sys.argv[2].encode() + b"\\n")
            buf = b""
            while b"\\n" not in buf:
                d = s.recv(65536)
                if not d:
                    break
                buf += d
            sys.stdout.write(buf.split(b"\\n")[0].decode())
            """
        let r = try runProcess(
            "/usr/bin/setpriv",
            [
                "--reuid=\(Nobody.uid)", "--regid=\(Nobody.uid)", "--clear-groups", "/usr/bin/python3", "-c", script,
                h.socket, line,
            ])
        return try? JSONValue.parse(r.stdout)
    }

    static let hasPython = FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")

    @Test(
        "a non-admin's shutdown is refused with permission_denied and the daemon keeps running",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as nobody"))
    func shutdownRefused() throws {
        let h = try DaemonHarness(controlSection: #"mode = "0666""#)
        let r = try h.assetctlAsNobody("shutdown")
        #expect(r.status == 1, "\(r.stdout)\(r.stderr)")
        #expect(r.stderr.contains("admin") || r.stderr.contains("permission"), "\(r.stderr)")
        if Self.hasPython {
            let reply = try rawCallAsNobody(h, #"{"jsonrpc":"2.0","id":1,"method":"shutdown"}"#)
            #expect(reply?["error"]?["code"] == .int(Int64(Code.application)), "\(reply?.serialized() ?? "no reply")")
            #expect(reply?["error"]?["data"]?["code"] == "permission_denied")
        }
        // A daemon stopping would refuse a new connection's request with shutting_down.
        #expect(try h.client().call("ping")["version"] != nil)
        #expect(h.isRunning)
        let ping = try h.assetctlAsNobody("ping")
        #expect(ping.status == 0, "nobody may call everything else: \(ping.stderr)")
    }

    @Test(
        "an object put by a client without an owner belongs to that client's user",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as nobody"))
    func ownerFromPeerCredentials() throws {
        let h = try DaemonHarness(controlSection: #"mode = "0666""#)
        let put = try h.assetctlAsNobody("put", "owned", "k", #"{"v":1}"#)
        #expect(put.status == 0, "\(put.stderr)")
        #expect(try h.client().getObject("owned", "k")["owner"] == .string(Nobody.name))
        #expect(try h.client().call("stats")["objects"] == 1)
    }

    @Test(
        "with enforce_ownership a non-admin cannot delete or overwrite another's object but can its own",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as nobody"))
    func enforceOwnership() throws {
        let h = try DaemonHarness(controlSection: "mode = \"0666\"\nenforce_ownership = true")
        let c = try h.client()
        try c.putObject("e", "roots", ["v": 1])
        #expect(try h.assetctlAsNobody("rm", "e", "roots").status == 1)
        #expect(try h.assetctlAsNobody("put", "e", "roots", #"{"v":2}"#).status == 1)
        #expect(try h.assetctlAsNobody("touch", "e", "roots").status == 1)
        #expect(
            try h.assetctlAsNobody("put", "e", "claimed", "--owner", "root").status == 1,
            "nor put an object for another owner")
        #expect(try c.getObject("e", "roots")["value"] == ["v": 1])
        #expect(try c.getObject("e", "claimed") == .null)

        #expect(try h.assetctlAsNobody("put", "e", "mine", #"{"v":1}"#).status == 0)
        #expect(try h.assetctlAsNobody("put", "e", "mine", #"{"v":2}"#).status == 0)
        #expect(try c.getObject("e", "mine")["value"] == ["v": 2])
        #expect(try h.assetctlAsNobody("rm", "e", "mine").status == 0)
        #expect(try c.getObject("e", "mine") == .null)
        #expect(try h.assetctlAsNobody("get", "e", "roots").status == 0, "reads stay open to everyone")
    }

    @Test(
        "control.admin_uids makes a user an admin: its shutdown stops the daemon with exit 0",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as nobody"))
    func adminUIDs() throws {
        let h = try DaemonHarness(controlSection: "mode = \"0666\"\nadmin_uids = [\(Nobody.uid)]")
        let r = try h.assetctlAsNobody("shutdown")
        #expect(r.status == 0, "\(r.stderr)")
        #expect(h.waitForExit() == 0)
    }

    @Test(
        "SIGHUP reloads enforce_ownership and admin_uids without a restart",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as nobody"))
    func reloadAccess() throws {
        let h = try DaemonHarness(controlSection: #"mode = "0666""#)
        let c = try h.client()
        try c.putObject("h", "roots", ["v": 1])
        #expect(try h.assetctlAsNobody("put", "h", "roots", #"{"v":2}"#).status == 0, "not enforced yet")
        #expect(try h.assetctlAsNobody("shutdown").status == 1)

        h.controlSection = "mode = \"0666\"\nenforce_ownership = true"
        try h.reload()
        try c.putObject("h", "roots", ["v": 3])
        #expect(try h.assetctlAsNobody("put", "h", "roots", #"{"v":4}"#).status == 1, "enforced after the reload")
        #expect(try c.getObject("h", "roots")["value"] == ["v": 3])

        h.controlSection = "mode = \"0666\"\nenforce_ownership = true\nadmin_uids = [\(Nobody.uid)]"
        try h.reload()
        #expect(h.log.contains("reload: control.admin_uids adds [\(Nobody.uid)]"), "\(h.log.suffix(2000))")
        #expect(try h.assetctlAsNobody("shutdown").status == 0, "an admin after the reload")
        #expect(h.waitForExit() == 0)
    }

    @Test(
        "SIGHUP does not turn enforce_ownership off (a file cut before the key reads as false); a restart does",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as nobody"))
    func reloadKeepsOwnershipOn() throws {
        let h = try DaemonHarness(controlSection: "mode = \"0666\"\nenforce_ownership = true")
        let c = try h.client()
        try c.putObject("h", "roots", ["v": 1])
        h.controlSection = #"mode = "0666""#
        try h.writeConfig()
        kill(h.process!.processIdentifier, SIGHUP)  // started above
        #expect(eventually { h.log.contains("reload failed") }, "\(h.log.suffix(2000))")
        #expect(h.log.contains("does not turn ownership checks off"), "\(h.log.suffix(2000))")
        #expect(try h.assetctlAsNobody("put", "h", "roots", #"{"v":2}"#).status == 1, "still enforced")
        #expect(h.stop() == 0)
        try h.start()
        #expect(try h.assetctlAsNobody("put", "h", "roots", #"{"v":2}"#).status == 0, "off after the restart")
    }

    @Test(
        "with enforce_ownership a non-admin cannot move accessed of another's object through object.get touch",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as nobody"))
    func getTouchBypassesOwnership() throws {
        let h = try DaemonHarness(controlSection: "mode = \"0666\"\nenforce_ownership = true")
        let c = try h.client()
        try c.putObject("e", "roots", ["v": 1])
        let before = try #require(try c.getObject("e", "roots")["accessed"])
        #expect(try h.assetctlAsNobody("touch", "e", "roots").status == 1, "object.touch is refused")
        passClock(before.doubleValue ?? 0)  // so that a touch would move accessed
        _ = try h.assetctlAsNobody("get", "--touch", "e", "roots")
        #expect(try c.getObject("e", "roots")["accessed"] == before, "object.get touch moved accessed of root's object")
        _ = try h.assetctlAsNobody(
            "transact", #"[{"method":"object.get","params":{"collection":"e","key":"roots","touch":true}}]"#)
        #expect(
            try c.getObject("e", "roots")["accessed"] == before,
            "transact object.get touch moved accessed of root's object")
    }

    @Test(
        "with enforce_ownership a non-admin cannot delete another's object through an edge it adds to it",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as nobody"))
    func edgeCascadeBypassesOwnership() throws {
        let h = try DaemonHarness(controlSection: "mode = \"0666\"\nenforce_ownership = true")
        let c = try h.client()
        try c.putObject("e", "victim", ["v": 1])
        #expect(try h.assetctlAsNobody("rm", "e", "victim").status == 1, "a direct delete is refused")
        #expect(try h.assetctlAsNobody("put", "e", "mine", #"{"v":1}"#).status == 0)
        _ = try h.assetctlAsNobody(
            "edge", "add", "x", "e", "mine", "e", "victim", "--rules", "deleteDestinationIfSourceDeleted")
        _ = try h.assetctlAsNobody("rm", "e", "mine")
        #expect(try c.getObject("e", "victim") != .null, "root's object was deleted by nobody's cascade")
    }

    @Test(
        "with enforce_ownership a non-admin may name an existing file only where it could unlink it",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as nobody"))
    func fileUnlinkAccess() throws {
        let h = try DaemonHarness(controlSection: "mode = \"0666\"\nenforce_ownership = true")
        let c = try h.client()
        for (name, gid) in [("private", UInt32(0)), ("group", Nobody.uid)] {
            let folder = h.root + "/" + name
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
            #expect(chown(folder, 0, gid) == 0 && chmod(folder, 0o775) == 0)
            #expect(FileManager.default.createFile(atPath: folder + "/x.bin", contents: Data("x".utf8)))
        }
        let denied = try h.assetctlAsNobody("put", "e", "a", #"{"file":"\#(h.root)/private/x.bin"}"#)
        #expect(denied.status == 1 && denied.stderr.contains("may not remove"), "\(denied.stderr)")
        #expect(try c.call("file.get", ["path": .string(h.root + "/private/x.bin")]) == .null)
        // Its primary group, from the peer's credentials, may write the folder.
        #expect(try h.assetctlAsNobody("put", "e", "b", #"{"file":"\#(h.root)/group/x.bin"}"#).status == 0)
        // A file not there yet: judged on its folder.
        #expect(try h.assetctlAsNobody("put", "e", "c", #"{"file":"\#(h.root)/private/new.bin"}"#).status == 1)
        #expect(try h.assetctlAsNobody("put", "e", "c", #"{"file":"\#(h.root)/group/new.bin"}"#).status == 0)
    }

    @Test(
        "after a SIGHUP turning enforce_ownership on, a non-admin's deleting edge spares root's file",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as nobody"))
    func reloadReachesRules() throws {
        let h = try DaemonHarness(controlSection: #"mode = "0666""#)
        let c = try h.client()
        // A folder where nobody may unlink root's file, so that it may name it.
        let file = h.root + "/shared/x.bin"
        try FileManager.default.createDirectory(atPath: h.root + "/shared", withIntermediateDirectories: false)
        #expect(chmod(h.root + "/shared", 0o777) == 0)
        #expect(FileManager.default.createFile(atPath: file, contents: Data("x".utf8)))
        try c.putObject("r", "b", ["file": .string(file)])
        h.controlSection = "mode = \"0666\"\nenforce_ownership = true"
        try h.reload()
        #expect(try h.assetctlAsNobody("put", "e", "mine", "{}").status == 0)
        let added = try h.assetctlAsNobody(
            "edge", "add", "x", "e", "mine", "--file", file, "--rules", "deleteDestinationIfSourceDeleted")
        #expect(added.status == 0, "\(added.stderr)")
        #expect(try h.assetctlAsNobody("rm", "e", "mine").status == 0)
        #expect(try c.call("file.get", ["path": .string(file)]) != .null, "root's file was deleted by nobody's rule")
        #expect(FileManager.default.fileExists(atPath: file))
    }
}
