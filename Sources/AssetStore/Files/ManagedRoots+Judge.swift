// A file a caller names outside a write: judged as a put naming it is (FileProbe's walk on its
// own descriptors), for a lease of a file no object of the caller holds yet; or only looked at
// for what it is, for a lease of any other file.

extension ManagedRoots {
    /// Throws unless `check` lets its caller name `path` (normalised, below `root`): a
    /// refusal is `permission_denied`, a path a put could not name either its own error.
    public func judge(_ path: String, root: String, for check: FileReferenceCheck) throws {
        _ = try FileProbe.probe(path: path, root: root, roots: self, check: check)
    }

    /// Throws `not_a_regular_file` if a folder, a symlink or a device is at `path`
    /// (normalised, below `root`), as a put naming it would. What else a probe cannot tell (a
    /// root away, a name too long to be a file's) refuses nothing: a lease names a path, and
    /// an unlink makes its own checks.
    public func look(at path: String, root: String) throws(StoreError) {
        do {
            _ = try FileProbe.probe(path: path, root: root, roots: self)
        } catch let e where e.code == .notARegularFile {
            throw e
        } catch {}
    }
}
