// A non-admin's read-only maintenance run (a dry run, verify without repair) takes a slot of
// its uid's own (assetd(8), CONTROL PROTOCOL): one slot for all non-admins let a user
// pipelining `verify` take it again as each run ended, and every other user's verify and dry
// run was `busy` for ever. A uid's second run at once is still `busy`. Held as in
// PoolTurnsTests (ASSETD_DEBUG_HOLD_LONG_PARSE, FILE.held-N, FILE.release-N).

import AssetClient
import Foundation
import Testing

#if DEBUG
@Suite struct ReadOnlySlotTests {
    static let common = """
        import ctypes, fcntl, os, select, signal, socket, struct, sys, termios
        def wait_for(path):
            # Blocks on inotify until `path` is made (created or renamed in), no polling.
            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.inotify_init1(os.O_CLOEXEC)
            libc.inotify_add_watch(fd, os.path.dirname(path).encode(), 0x100 | 0x80)
            while not os.path.exists(path): os.read(fd, 4096)
            os.close(fd)
        def connect():
            s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); return s
        def answer(s):
            data = b""
            while not data.endswith(b"\\n"):
                chunk = s.recv(65536)
                if not chunk: break
                data += chunk
            return data
        verify = b'{"jsonrpc":"2.0","id":7,"method":"verify"}\\n'
        """

    /// nobody's 3 long lines held on the pool (argv[2] is FILE.held-3), then two verifies on
    /// two connections: one claims nobody's slot and waits for a thread, the other is `busy`,
    /// printed. The connections stay open until stopped.
    static let holder =
        common + "\n" + """
            params = ",".join('"p%d":%d' % (i, i) for i in range(6000))
            held = []
            for i in range(3):
                s = connect()
                s.sendall(('{"jsonrpc":"2.0","id":%d,"method":"ping","params":{%s}}\\n' % (i, params)).encode())
                held.append(s)
            wait_for(sys.argv[2])
            a = connect(); b = connect(); held += [a, b]
            a.sendall(verify); b.sendall(verify)
            ready, _, _ = select.select([a, b], [], [])
            print(answer(ready[0]).decode().strip(), flush=True)
            signal.pause()
            """

    /// Another user's verify: "sent" once the daemon has read it, then its answer.
    static let other =
        common + "\n" + """
            s = connect(); s.sendall(verify)
            # No event says a peer consumed the bytes: the kernel's count of unread ones is asked.
            while struct.unpack("i", fcntl.ioctl(s, termios.TIOCOUTQ, b"\\0" * 4))[0]: os.sched_yield()
            print("sent", flush=True)
            print(answer(s).decode().strip(), flush=True)
            """

    @Test(
        "a user holding its read-only slot keeps no other user's verify out",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as other users"))
    func anotherUserVerifies() throws {
        let (h, hold) = try PoolTurnsTests.heldDaemon()
        let owner = try PoolTurnsTests.asUser(Nobody.uid, Self.holder, [h.socket, hold + ".held-3"])
        defer { owner.stop() }
        // nobody's second run at once is busy: its first holds nobody's slot, waiting for a thread.
        #expect(owner.waitForLine { $0.contains("busy") }, "\(owner.output)")
        let other = try PoolTurnsTests.asUser(PoolTurnsTests.otherUID, Self.other, [h.socket])
        defer { other.stop() }
        #expect(other.waitForLine { $0 == "sent" }, "\(other.output)")
        // A thread frees: the other user's verify takes it (nobody is at half the threads).
        #expect(FileManager.default.createFile(atPath: hold + ".release-1", contents: nil))
        #expect(other.waitForLine(timeout: 90) { $0.contains(#""id":7"#) }, "\(other.output)")
        let answer = other.output.last ?? ""
        #expect(answer.contains(#""result""#) && !answer.contains("busy"), "\(answer)")
        try FileManager.default.removeItem(atPath: hold)
        #expect(h.stop() == 0)
    }
}
#endif
