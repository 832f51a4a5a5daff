// Two roots that meet through a bind mount: one folder of a file system shown at a second
// path, so a root is (or lies inside, or holds) another root though no path, resolved or
// not, says so. Judged on the file system (MountTable.swift), as assetd.toml(5) says under
// files.roots: a file there would have two paths, and one path's holders going would unlink
// the file the other's still hold.

extension ManagedRoots {
    /// Why two roots are one folder or one inside the other on their file system when their
    /// paths do not say so (a bind mount), or nil. A root nested in another where its path says
    /// (the same folder of the file system as the outer root's path and the names between)
    /// is fine. A root not made yet is judged by its nearest existing folder; nothing is
    /// judged without the table (no /proc).
    public func mountAlias(_ table: MountTable?) -> String? {
        guard let table else { return nil }
        let places = paths.map { table.place(of: $0) }
        for i in paths.indices {
            for j in paths.indices where i != j {
                guard let inner = places[i], let outer = places[j], outer.holds(inner) else { continue }
                if ManagedRoots.isBelow(paths[i], paths[j]) {
                    // Nested as written: fine where the file system agrees.
                    var expected = outer.path == [UInt8(ascii: "/")] ? [] : outer.path
                    expected += Array(paths[i].utf8).dropFirst(paths[j].utf8.count)
                    if inner.path == expected { continue }
                }
                let how = inner.path == outer.path ? "the same folder as" : "inside"
                return "\(paths[i]) is, through a bind mount, \(how) \(paths[j]): \(paths[i]) is "
                    + "\(inner.description) and \(paths[j]) is \(outer.description) (/proc/self/mountinfo); "
                    + "a file there would have two paths"
            }
        }
        return nil
    }
}
