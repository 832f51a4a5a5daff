// A file a caller names outside a write: judged as a put naming it is (FileProbe's walk on its
// own descriptors), for a lease of a file no object of the caller holds yet.

extension ManagedRoots {
    /// Throws unless `check` lets its caller name `path` (normalised, below `root`): a
    /// refusal is `permission_denied`, a path a put could not name either its own error.
    public func judge(_ path: String, root: String, for check: FileReferenceCheck) throws {
        _ = try FileProbe.probe(path: path, root: root, roots: self, check: check)
    }
}
