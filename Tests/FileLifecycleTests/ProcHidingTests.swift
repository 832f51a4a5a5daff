// files.skip_open's /proc pass where /proc hides other users' processes (systemd's
// ProtectProc=invisible, a hidepid= mount): a file one of them has open would look closed, so
// the pass says it cannot tell and the file is kept.

import Foundation
import Glibc
import Testing
@testable import AssetStore
import AssetStoreTestSupport

@Suite struct ProcHidingTests {
    static func mountinfo(_ options: String) -> String {
        """
        22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,discard
        23 22 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc \(options)
        24 22 0:5 / /dev rw,nosuid shared:2 - devtmpfs udev rw,size=4096k

        """
    }
    static let noCapabilities = "Name:\tassetd\nCapEff:\t0000000000000000\n"
    static let ptrace = "Name:\tassetd\nCapEff:\t0000000000080000\n"

    @Test(
        "hidepid=2, invisible and ptraceable hide other users' processes without CAP_SYS_PTRACE",
        arguments: ["rw,hidepid=2", "rw,hidepid=invisible", "rw,hidepid=4", "rw,subset=pid,hidepid=ptraceable"])
    func hidden(options: String) {
        let why = ProcScan.hiding(mountinfo: Self.mountinfo(options), status: Self.noCapabilities)
        #expect(why?.contains("hidepid=") == true, "\(String(describing: why))")
        #expect(ProcScan.hiding(mountinfo: Self.mountinfo(options), status: Self.ptrace) == nil)
    }

    @Test("a /proc that lists every process, or only denies reading others' (hidepid=1), hides none")
    func notHidden() {
        for options in ["rw", "rw,hidepid=0", "rw,hidepid=1", "rw,hidepid=noaccess", "rw,hidepid=off"] {
            #expect(
                ProcScan.hiding(mountinfo: Self.mountinfo(options), status: Self.noCapabilities) == nil, "\(options)")
        }
        #expect(ProcScan.hiding(mountinfo: nil, status: nil) != nil, "an unreadable mountinfo tells nothing")
    }

    @Test("an idle file is undetermined, not clear, when /proc hides processes")
    func idleFileUndetermined() throws {
        let f = try Fixture()
        let path = try f.makeFile("idle.bin")
        let folder = open(f.root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        try #require(folder >= 0)
        defer { close(folder) }
        var st = stat()
        try #require(stat(path, &st) == 0)
        let hiding = ProcScan.hiding(mountinfo: Self.mountinfo("rw,hidepid=invisible"), status: Self.noCapabilities)
        let probe = OpenFileProbe(useLeases: false) { ProcScan(files: [], problem: hiding) }
        let check = probe.check(
            dirfd: folder, leaf: "idle.bin", device: Int64(bitPattern: UInt64(st.st_dev)),
            inode: Int64(bitPattern: UInt64(st.st_ino)))
        guard case .undetermined(let why) = check else {
            Issue.record("an idle file was not undetermined: \(check)")
            return
        }
        #expect(why.contains("hidepid=invisible"), "\(why)")
    }

    @Test("this machine's /proc is read as its mount says")
    func thisMachine() {
        let hidden = ProcScan.hiding(
            mountinfo: try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8),
            status: try? String(contentsOfFile: "/proc/self/status", encoding: .utf8))
        #expect((ProcScan.read().problem?.contains("hidepid=") ?? false) == (hidden != nil))
    }
}
