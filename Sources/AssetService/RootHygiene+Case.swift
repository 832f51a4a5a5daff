// Roots on file systems that fold case (assetd(8), "Managed roots"). The registry compares
// paths as bytes; where the file system takes "A.jpg" and "a.jpg" for one file, two objects
// can hold it under two paths, and deleting one unlinks the file the other still holds.

import AssetStore

extension RootHygiene {
    /// File system types whose lookups fold case (statfs f_type), by name.
    static let caseFolding: [Int64: String] = [
        0x4d44: "vfat", 0x2011_BAB0: "exfat", 0x7366_746e: "ntfs3", 0x482b: "hfsplus", 0xFF53_4D42: "cifs",
        0xFE53_4D42: "smb2", 0x517B: "smb",
    ]

    /// Why `root`, on a file system of `type`, is refused, or nil.
    static func foldsCase(_ root: String, type: Int64?) -> String? {
        guard let type, let name = caseFolding[type] else { return nil }
        return "\(root) is on a \(name) file system, whose names ignore case: one file could be held under "
            + "two spellings of its path and unlinked while one still holds it; use a case-sensitive file system"
    }
}
