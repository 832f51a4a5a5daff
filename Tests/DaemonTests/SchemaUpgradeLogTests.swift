// A store from before schema v11 gets the index file_identity over its whole file registry at
// start, before READY=1: a large one looks hung unless the daemon says what it is doing, in
// its log (notice) and as its systemd status.

@testable import AssetStore
import Foundation
import GRDB
import Testing
import AssetStoreTestSupport

@Suite struct SchemaUpgradeLogTests {
    /// A datagram socket bound at `path`, as systemd's NOTIFY_SOCKET.
    private func notifySocket(_ path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        // Room for the terminating NUL: a longer path would be cut short or overrun sun_path.
        guard path.utf8.count < MemoryLayout.size(ofValue: addr.sun_path) else {
            close(fd)
            throw POSIXError(.ENAMETOOLONG)
        }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in path.utf8.enumerated() { raw[i] = b }
        }
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0 else {
            close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        return fd
    }

    /// The datagrams queued on `fd`.
    private func datagrams(_ fd: Int32) -> [String] {
        var out = [String]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            guard n > 0 else { return out }
            out.append(String(decoding: buffer[0..<n], as: UTF8.self))
        }
    }

    @Test("the upgrade to v11 logs the index it builds and the rows, and tells systemd, before READY")
    func upgradeSaysSo() throws {
        let h = try DaemonHarness(start: false)
        try FileManager.default.createDirectory(
            atPath: (h.database as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let pool = try DatabasePool(path: h.database)
        try Schema.migrator().migrate(pool, upTo: "v10")
        try pool.write { db in
            for i in 0..<3 {
                try db.execute(
                    sql: "INSERT INTO file (path, size, device, inode, missing, first_seen) VALUES (?, 10, 7, ?, 0, 0)",
                    arguments: ["\(h.root)/n\(i)", 40 + i])
            }
        }
        try pool.close()
        let fd = try notifySocket(h.dir + "/notify.sock")
        defer { close(fd) }
        h.environment["NOTIFY_SOCKET"] = h.dir + "/notify.sock"
        try h.start()
        let line = "rebuilding index file_identity (files counted once, schema v11): 3 files; this may take a while"
        let logged = h.log.split(separator: "\n").filter { $0.contains(line) }
        #expect(logged.count == 1 && logged.first?.contains(" notice ") == true, "\(h.log)")
        let sent = datagrams(fd)
        let status = try #require(sent.firstIndex { $0 == "STATUS=" + line }, "\(sent)")
        let ready = try #require(sent.firstIndex { $0.hasPrefix("READY=1") }, "\(sent)")
        #expect(status < ready)
        #expect(sent[ready].contains("STATUS=serving"), "\(sent)")
    }

    @Test("a start after a crash says it checks the WAL left, in its log and to systemd, extending the timeout")
    func crashWALCheckSaysSo() throws {
        let h = try DaemonHarness()
        try h.client().putObject("c", "a")
        h.stop(signal: SIGKILL)
        let fd = try notifySocket(h.dir + "/notify.sock")
        defer { close(fd) }
        h.environment["NOTIFY_SOCKET"] = h.dir + "/notify.sock"
        try h.start()
        #expect(h.log.contains("checking the WAL a crash left"), "\(h.log)")
        let sent = datagrams(fd)
        let status = try #require(sent.firstIndex { $0.hasPrefix("STATUS=checking the WAL") }, "\(sent)")
        #expect(sent[status].contains("EXTEND_TIMEOUT_USEC="), "\(sent)")
        let ready = try #require(sent.firstIndex { $0.hasPrefix("READY=1") }, "\(sent)")
        #expect(status < ready)
        #expect(h.stop() == 0)
    }
}

/// The upgrade on a nearly full state disk (a 32 MiB tmpfs; CAP_SYS_ADMIN).
@Suite(.enabled(if: Tmpfs.available, "mounting a tmpfs needs CAP_SYS_ADMIN"))
struct SchemaUpgradeRoomTests {
    @Test("an upgrade the nearly full state disk has no room for exits 78, naming the space, its reserve kept")
    func upgradeWithoutRoomExits78() throws {
        let h = try DaemonHarness(start: false)
        let state = (h.database as NSString).deletingLastPathComponent
        #expect(Tmpfs.mount(state, mib: 32))
        defer {
            Tmpfs.unmount(state)
            withExtendedLifetime(h) {}
        }
        #expect(chmod(state, 0o700) == 0)  // a tmpfs's top folder is 1777: not a database's
        try h.start()  // the store and its reserve, a sixteenth of the disk
        #expect(h.stop() == 0)
        for suffix in ["", "-wal", "-shm"] { unlink(h.database + suffix) }
        let pool = try DatabasePool(path: h.database)
        try Schema.migrator().migrate(pool, upTo: "v10")
        try pool.write { db in
            try db.execute(
                sql: """
                    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 60000)
                    INSERT INTO file (path, size, device, inode, mtime, missing, first_seen)
                    SELECT ? || '/d' || (i % 100) || '/file' || i || '.bin', i, 2049, 1000000 + i, 1.7e9, 0, 1 FROM n
                    """, arguments: [h.root])
        }
        try pool.close()
        // 1 MiB free: the index needs about 2.4 MB (in the WAL, then in the file).
        let filler = state + "/filler"
        Tmpfs.fill(filler)
        var st = stat()
        #expect(stat(filler, &st) == 0 && truncate(filler, st.st_size - (1 << 20)) == 0)
        do {
            try h.start()
            Issue.record("started: \(h.log)")
        } catch HarnessError.exited(let status, let log) {
            #expect(status == 78)
            #expect(log.contains("the schema upgrade (v11: an index over 60000 files) needs about"), "\(log)")
            // Said before the measure, which reads every row on a disk this short.
            let said = log.range(of: "rebuilding index file_identity (files counted once, schema v11): 60000 files")
            let refused = log.range(of: "the schema upgrade (")
            #expect(said != nil && refused != nil && said!.lowerBound < refused!.lowerBound, "\(log)")
        }
        #expect(FileManager.default.fileExists(atPath: h.database + ".ballast"))
    }
}
