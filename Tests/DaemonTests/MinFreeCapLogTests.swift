// A min_free out of reach through the daemon (assetd.toml(5), [policy]): the root is an 8 MiB
// tmpfs that another program's file fills. One warning when the floor is capped, none at the
// runs that keep the cap (the floor crossed within the margin among them), a line when it lifts; `assetctl enforce` and `stats` show the cap.
// Mounting needs CAP_SYS_ADMIN: skipped, saying so, without it.

import AssetClient
import AssetStoreTestSupport
import Foundation
import Glibc
import Testing

@Suite(.enabled(if: Tmpfs.available, "mounting a tmpfs needs CAP_SYS_ADMIN"))
struct MinFreeCapLogTests {
    /// Another program's file of `size` bytes on the root's file system, less the blocks of
    /// the root's marker (assetd(8), ROOTS), so that the disk holds `size` beside the cache.
    func filler(_ h: DaemonHarness, _ size: Int) {
        var st = stat()
        let marker = stat(h.root + "/.assetd-root", &st) == 0 ? Int(st.st_blocks) * 512 : 0
        let fd = open(h.root + "/other", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        defer { close(fd) }
        #expect(fd >= 0 && posix_fallocate(fd, 0, off_t(size - marker)) == 0)
    }

    func count(_ text: String, in log: String) -> Int { log.components(separatedBy: text).count - 1 }

    @Test("the daemon warns once when a min_free out of reach is capped, across the edge too, and says when it lifts")
    func logsOnceEachWay() throws {
        let mib = 1 << 20
        let h = try DaemonHarness(
            extraConfig: "[policy]\ninterval = \"1h\"\nmin_age = \"0s\"\norder = \"lru\"\nmin_free = \"4MiB\"\n",
            start: false)
        #expect(mount("tmpfs", h.root, "tmpfs", 0, "size=8m,mode=0777") == 0)
        defer { umount2(h.root, Int32(MNT_DETACH)) }
        try h.start()
        let c = try h.client()
        for i in 0..<4 { try c.putFile("media", "k\(i)", try h.makeFile("f\(i)", size: mib / 2)) }
        filler(h, 5 * mib)  // 1 MiB free, 3 MiB at most with the cache gone

        let capped = "cannot be met on the file system of \(h.root)"
        let first = try h.assetctl("enforce")
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains("deleted 0 objects"), "\(first.stdout)")
        #expect(first.stdout.contains("capped at \(mib) bytes, the cache keeping at most \(2 * mib) bytes"))
        #expect(count(capped, in: h.log) == 1, "\(h.log.suffix(2000))")
        let stats = try c.call("stats")
        #expect(stats["min_free_caps"]?[h.root]?["cap"] == .int(Int64(mib)), "\(stats)")
        #expect(try h.assetctl("enforce").status == 0)
        #expect(count(capped, in: h.log) == 1, "a second run that keeps the cap logs nothing")

        for _ in 0..<2 {  // across the floor and back, within the margin (1 MiB): no lift, no new cap
            filler(h, 3 * mib + 3 * mib / 4)
            #expect(try h.assetctl("enforce").stdout.contains("deleted 0 objects"))
            filler(h, 5 * mib)
            #expect(try h.assetctl("enforce").status == 0)
        }
        #expect(count(capped, in: h.log) == 1, "\(h.log.suffix(2000))")
        #expect(count("can be met again", in: h.log) == 0)

        filler(h, 2 * mib + mib / 2)  // 3.5 MiB free, 5.5 MiB reachable: k0 goes for 4 MiB
        let lifted = try h.assetctl("enforce")
        #expect(lifted.stdout.contains("deleted 1 object"), "\(lifted.stdout)")
        #expect(count("can be met again on the file system of \(h.root)", in: h.log) == 1)
        #expect(try c.call("stats")["min_free_caps"] == nil)
    }
}
