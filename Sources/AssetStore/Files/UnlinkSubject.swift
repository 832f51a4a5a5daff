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
    /// Every folder the walk went through, the root first and `folder` last.
    public var folders: [FolderSeen] = []
}

/// A folder as a probe's walk saw it.
public struct FolderSeen: Sendable, Hashable {
    public var device: Int64
    public var inode: Int64
    public var owner: UInt32
    public var group: UInt32
    public var mode: UInt32
    public var hasACL: Bool
    /// statx birth time, nanoseconds; nil where the file system reports none.
    public var birth: Int64?

    /// Memberwise.
    public init(device: Int64, inode: Int64, owner: UInt32, group: UInt32, mode: UInt32, hasACL: Bool, birth: Int64?) {
        self.device = device
        self.inode = inode
        self.owner = owner
        self.group = group
        self.mode = mode
        self.hasACL = hasACL
        self.birth = birth
    }
}

/// Whom a file is judged for, and how: a non-admin's call under enforce_ownership.
public struct FileReferenceCheck: Sendable {
    /// The caller's uid.
    public var uid: UInt32
    /// The owner name its objects have.
    public var owner: String
    /// Nil to let a subject be named, else why not.
    public var refusal: @Sendable (UnlinkSubject) -> String?

    /// Memberwise.
    public init(uid: UInt32, owner: String, refusal: @escaping @Sendable (UnlinkSubject) -> String?) {
        self.uid = uid
        self.owner = owner
        self.refusal = refusal
    }
}

/// What a checked probe passed: for whom, and the folder it was judged on (the file's, or
/// for a file not there yet the nearest that exists). The row keeps it as its claim
/// (`FileClaim`): whatever is at the path when a rule deletes it is taken only as far as this
/// judgement covers it.
public struct FileJudgement: Sendable, Hashable {
    public var uid: UInt32
    public var owner: String
    public var folder: FolderSeen?
}
