// The built-in index's size and file count of a new object, worked out from its probes before
// its edges exist, so that the object is inserted with them (IndexTable.refresh then finds
// nothing to write).

/// The total size and number of distinct files an object holds.
struct HeldFiles: Equatable {
    var size: Int64
    var files: Int

    /// Paths compared pairwise up to this many file edges; past it the refresh counts.
    static let compared = 16

    /// What the index refresh will find for a new object whose derived edges are `desired`,
    /// if they all name files: each path once, by its bytes (as the registry's UNIQUE path
    /// compares them), at the size of its last probe, which its registry row holds once the
    /// edges are derived. Nil for an object edge, or too many edges to compare.
    init?(_ desired: [DesiredEdge]) {
        guard desired.count <= Self.compared else { return nil }
        size = 0
        files = 0
        for (i, d) in desired.enumerated() {
            guard case .file(let path) = d.destination, let state = d.fileState else { return nil }
            let namedAgain = desired[(i + 1)...].contains { later in
                if case .file(let p) = later.destination { return p.utf8.elementsEqual(path.utf8) }
                return false
            }
            if namedAgain { continue }
            size = size.adding(saturating: state.size)
            files += 1
        }
    }
}
