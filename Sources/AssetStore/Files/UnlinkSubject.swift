// What a caller's right to unlink a file is judged on (control.enforce_ownership): the folder
// and the file as the probe's own descriptors saw them, so that a folder renamed between a
// check by path and the probe cannot stand in for the one probed.

import Glibc

/// A file a caller names, as the probe's walk found it.
public struct UnlinkSubject {
    /// The path named.
    public var path: String
    /// The folder holding the file or, for a file not there yet, the nearest folder on its
    /// way that exists.
    public var folderPath: String
    public var folder: stat
    /// True when the folder has an access ACL (or it could not be told): its mode bits then
    /// do not say who may write it.
    public var folderHasACL: Bool
    /// The file, nil when it is not there yet.
    public var file: stat?
}

/// Judges an `UnlinkSubject`: nil to let it be named, else why not.
public typealias FileReferenceCheck = (UnlinkSubject) -> String?
