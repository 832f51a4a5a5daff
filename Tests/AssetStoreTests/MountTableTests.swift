// MountTable reads /proc/self/mountinfo (proc(5)): each line's mount id, file system, the
// folder of it the mount shows (its root) and where, with \ooo escapes in paths.

@testable import AssetStore
import Testing

@Suite struct MountTableTests {
    static let text = """
        22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda rw
        30 22 8:1 /srv/media/sub /srv/b rw,relatime shared:1 - ext4 /dev/vda rw
        31 22 0:40 /@home /home rw - btrfs /dev/vdb rw,subvol=/@home
        32 22 8:1 /with\\040space /mnt/a\\040b\\134c rw - ext4 /dev/vda rw
        33 22 8:1 /odd\\9xx /mnt/odd rw - ext4 /dev/vda rw
        not a line
        34 22 8:1
        """

    @Test("mountinfo lines are read with their escapes; short or malformed lines are skipped")
    func parses() {
        let table = MountTable(mountinfo: Array(Self.text.utf8))
        #expect(table.entries.map(\.id) == [22, 30, 31, 32, 33])
        #expect(table.entries[1].root == Array("/srv/media/sub".utf8) && table.entries[1].point == Array("/srv/b".utf8))
        #expect(table.entries[2].device == "0:40" && table.entries[2].root == Array("/@home".utf8))
        #expect(table.entries[3].root == Array("/with space".utf8))
        #expect(table.entries[3].point == Array("/mnt/a b\\c".utf8))
        #expect(table.entries[4].root == Array("/odd\\9xx".utf8), "not octal: kept as it is")
    }

    @Test("a place holds another on its file system only, component by component")
    func holds() {
        func place(_ device: String, _ path: String) -> FileSystemPlace {
            FileSystemPlace(device: device, path: Array(path.utf8), mountPoint: "/", mountRoot: "/")
        }
        #expect(place("8:1", "/srv/media").holds(place("8:1", "/srv/media/sub/x")))
        #expect(place("8:1", "/srv/media").holds(place("8:1", "/srv/media")))
        #expect(!place("8:1", "/srv/media").holds(place("8:1", "/srv/media2")))
        #expect(!place("8:1", "/srv/media").holds(place("8:2", "/srv/media/sub")))
        #expect(place("8:1", "/").holds(place("8:1", "/anything")))
        #expect(!place("8:1", "/srv/media/sub").holds(place("8:1", "/srv/media")))
    }
}
