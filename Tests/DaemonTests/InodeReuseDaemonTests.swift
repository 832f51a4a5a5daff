// I1 through the running daemon, as the issue found it: with files.unlink_delay = 1s, objects
// holding files are deleted, another program removes each file and writes a new one at its
// path (ext4 gives it the old inode number at once), and the daemon's own sweep must keep
// every new file.

import AssetClient
import Foundation
import Glibc
import Testing

@Suite struct InodeReuseDaemonTests {
    @Test("files written again at queued paths before the delayed sweep are all kept: 30 files")
    func recreatedFilesSurviveTheSweep() throws {
        let h = try DaemonHarness(filesSection: #"unlink_delay = "1s""#)
        let c = try h.client()
        let paths = try (0..<30).map { try h.makeFile(String(format: "p%02d.bin", $0)) }
        for (i, p) in paths.enumerated() { try c.putObject("r", "k\(i)", ["file": .string(p)]) }
        for i in paths.indices { _ = try c.deleteObject("r", "k\(i)") }
        var reused = 0
        for p in paths {
            // Whether or not the sweep came first (a loaded machine), the file at the path is new.
            let old = inode(p)
            _ = unlink(p)
            try Data(repeating: 5, count: 10).write(to: URL(fileURLWithPath: p))
            if inode(p) == old { reused += 1 }
        }
        // The daemon sweeps once the delay has passed; then nothing is pending.
        #expect(try eventually(timeout: 60) { try c.call("pending")["pending"] == [] }, "the queue never emptied")
        let unlinked = paths.filter { !h.exists($0) }
        #expect(unlinked.isEmpty, "new files unlinked: \(unlinked) (inode numbers reused: \(reused) of 30)")
    }

    private func inode(_ path: String) -> ino_t? {
        var st = stat()
        return lstat(path, &st) == 0 ? st.st_ino : nil
    }
}
