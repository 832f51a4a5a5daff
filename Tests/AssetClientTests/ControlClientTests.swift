// ControlClient against a real Unix socket in a temp folder, served by a scripted peer on a
// thread: ids match replies, events that arrive during a call wait for nextEvent, errors and
// end of stream surface as ClientError.

import Testing
import Foundation
import AssetClient
import JSON
import ControlProtocol

/// A one-connection server that runs `script` on the accepted descriptor.
private final class ScriptedPeer: @unchecked Sendable {  // fields set before the thread starts, then read-only
    let folder: String
    let path: String
    let listener: Int32
    private let done = DispatchSemaphore(value: 0)

    init(_ script: @escaping @Sendable (Int32) -> Void) throws {
        folder = NSTemporaryDirectory() + "assetctl-client-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        path = folder + "/s.sock"
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let pathBytes = Array(path.utf8) + [0]
        withUnsafeMutableBytes(of: &address.sun_path) { raw in raw.copyBytes(from: pathBytes) }
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        precondition(rc == 0 && listen(fd, 4) == 0, "bind/listen in a fresh temp folder")
        listener = fd
        let listener = fd
        let done = self.done
        Thread {
            let fd = accept(listener, nil, nil)
            if fd >= 0 {
                script(fd)
                close(fd)
            }
            done.signal()
        }.start()
    }

    func finish() {
        done.wait()
        close(listener)
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// Reads one line (without "\n") from `fd`; nil at end of stream.
    static func readLine(_ fd: Int32) -> JSONValue? {
        var bytes: [UInt8] = []
        var b: UInt8 = 0
        while recv(fd, &b, 1, 0) == 1 {
            if b == 10 { return try? JSONValue.parse(String(decoding: bytes, as: UTF8.self)) }
            bytes.append(b)
        }
        return nil
    }

    static func write(_ fd: Int32, _ value: JSONValue) {
        let bytes = RPCLine.encode(value)
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress!, $0.count, Int32(MSG_NOSIGNAL)) }
    }
}

@Suite struct ControlClientTests {
    @Test("replies match ids, events during a call wait for nextEvent, nil at the end")
    func conversation() throws {
        let peer = try ScriptedPeer { fd in
            // 1: an event first, then the reply echoing the request.
            guard let first = ScriptedPeer.readLine(fd) else { return }
            ScriptedPeer.write(
                fd, ["jsonrpc": "2.0", "method": "event", "params": ["type": "object.put", "commit": 1]])
            ScriptedPeer.write(fd, ["jsonrpc": "2.0", "id": 999, "result": "stale"])
            ScriptedPeer.write(fd, ["jsonrpc": "2.0", "id": first["id"] ?? .null, "result": first])
            // 2: an error reply.
            guard let second = ScriptedPeer.readLine(fd) else { return }
            ScriptedPeer.write(
                fd,
                [
                    "jsonrpc": "2.0", "id": second["id"] ?? .null,
                    "error": ["code": -32000, "message": "no object m/k", "data": ["code": "not_found"]],
                ])
            // 3: a notification, answered by nothing; echo it as an event so the test sees it.
            guard let third = ScriptedPeer.readLine(fd) else { return }
            ScriptedPeer.write(
                fd, ["jsonrpc": "2.0", "method": "event", "params": ["type": "echo", "request": third]])
        }
        defer { peer.finish() }
        let client = try ControlClient(socketPath: peer.path, timeout: 10)
        let echoed = try client.call("ping")
        #expect(echoed["id"] == .int(1))
        #expect(echoed["method"] == "ping")
        #expect(echoed["params"] == .object([:]))
        do {
            _ = try client.call("object.get", ["collection": "m", "key": "k"])
            Issue.record("an error reply must throw")
        } catch {
            guard case .rpc(let e) = error else { Issue.record("expected .rpc, got \(error)"); return }
            #expect(e.stableCode == "not_found")
            #expect(e.message == "no object m/k")
        }
        try client.notify("object.touch", ["collection": "m", "key": "k"])
        #expect(try client.nextEvent() == ["type": "object.put", "commit": 1])
        let echo = try #require(try client.nextEvent())
        #expect(echo["request"]?["id"] == nil)
        #expect(echo["request"]?["method"] == "object.touch")
        #expect(try client.nextEvent() == nil)
        #expect(throws: ClientError.closed) { try client.call("ping") }
    }

    @Test("a daemon that closes before answering is .closed")
    func closedBeforeReply() throws {
        let peer = try ScriptedPeer { fd in _ = ScriptedPeer.readLine(fd) }
        defer { peer.finish() }
        let client = try ControlClient(socketPath: peer.path)
        #expect(throws: ClientError.closed) { try client.call("ping") }
    }

    @Test("a reply that is not JSON is an I/O error")
    func garbage() throws {
        let peer = try ScriptedPeer { fd in
            _ = ScriptedPeer.readLine(fd)
            _ = "hello\n".withCString { send(fd, $0, 6, Int32(MSG_NOSIGNAL)) }
        }
        defer { peer.finish() }
        let client = try ControlClient(socketPath: peer.path)
        #expect {
            try client.call("ping")
        } throws: { error in
            if case ClientError.io(let why) = error { return why.contains("not JSON") }
            return false
        }
    }

    @Test("a timeout ends a wait for a reply that never comes")
    func timeout() throws {
        let peer = try ScriptedPeer { fd in
            _ = ScriptedPeer.readLine(fd)
            _ = ScriptedPeer.readLine(fd)  // until the client closes
        }
        let client = try ControlClient(socketPath: peer.path, timeout: 0.2)
        #expect {
            try client.call("ping")
        } throws: { error in
            if case ClientError.io(let why) = error { return why.contains("timed out") }
            return false
        }
        client.close()
        peer.finish()
    }

    @Test("a missing socket, a path too long and a non-socket are unreachable")
    func unreachable() throws {
        let folder = NSTemporaryDirectory() + "assetctl-client-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        _ = FileManager.default.createFile(atPath: folder + "/plain", contents: Data())
        for path in [folder + "/missing.sock", "/" + String(repeating: "x", count: 200), folder + "/plain", ""] {
            #expect {
                _ = try ControlClient(socketPath: path)
            } throws: { error in
                if case ClientError.unreachable = error { return true }
                return false
            }
        }
        do {
            _ = try ControlClient(socketPath: folder + "/missing.sock")
        } catch {
            #expect(error == .unreachable("connect: ENOENT (No such file or directory)"))
        }
    }
}
