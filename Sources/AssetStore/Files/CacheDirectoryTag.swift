// assetd's CACHEDIR.TAG (the Cache Directory Tagging convention, https://bford.info/cachedir/):
// written into every folder assetd creates as a managed root, and the consent that
// `verify --delete-orphans` asks of a root before it unlinks anything there (assetd(8)).
// Only a regular file named CACHEDIR.TAG directly in the root counts, never a symlink, and
// only one of root's, of the user assetd runs as or of the database's owner, with no other
// link: anyone who may write the root could create one, and an admin's delete-orphans would
// then unlink files that user could not.

import Glibc

/// Reading and writing assetd's cache directory tag.
public enum CacheDirectoryTag {
    /// The file's name in the root.
    public static let fileName = "CACHEDIR.TAG"
    /// The convention's signature: the file's first line.
    public static let signature = "Signature: 8a477f597d28d172789f06886806bc55"
    /// The line that makes the tag assetd's: a tag another program wrote (a build tool's,
    /// a browser's) is not consent to delete unregistered files.
    public static let assetdLine = "# This file is a cache directory tag created by assetd."

    /// The whole file as assetd writes it.
    public static let contents = """
        \(signature)
        \(assetdLine)
        # Files below this folder that no assetd object holds are orphans, which
        # `assetctl verify --delete-orphans` may delete. See assetd(8) and
        # https://bford.info/cachedir/ for cache directory tags.

        """

    /// True when `root` holds assetd's tag: a regular file CACHEDIR.TAG of root's, of this
    /// process's user or of `owner`, with one link, whose first line is the signature and
    /// which has assetd's line.
    public static func isPresent(in root: String, owner: UInt32? = nil) -> Bool {
        let fd = open(root + "/" + fileName, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG, st.st_nlink == 1,
            st.st_uid == 0 || st.st_uid == geteuid() || st.st_uid == owner
        else { return false }
        // The convention's tag is a few lines; 4 KiB is plenty and bounds what is read.
        var bytes = [UInt8](repeating: 0, count: 4096)
        let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { return false }
        let lines = String(decoding: bytes[..<n], as: UTF8.self).split(
            separator: "\n", omittingEmptySubsequences: false
        )
        .map { $0.hasSuffix("\r") ? $0.dropLast() : $0 }
        return lines.first == Substring(signature) && lines.contains(Substring(assetdLine))
    }

    /// Writes assetd's tag into `root` unless a file of that name is already there (it is
    /// never replaced); the errno of the call that failed, if one did.
    public static func write(in root: String, mode: mode_t = 0o644) -> (call: String, errno: Int32)? {
        let path = root + "/" + fileName
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        if fd < 0 { return errno == EEXIST ? nil : ("open \(path)", errno) }
        defer { close(fd) }
        let bytes = Array(contents.utf8)
        let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        guard n == bytes.count else {
            let e = n < 0 ? errno : EIO
            unlink(path)
            return ("write \(path)", e)
        }
        fchmod(fd, mode)  // the umask does not decide who may read the tag
        return nil
    }

    /// The message that refuses to delete orphans under a root without the tag.
    static func refusal(_ root: String) -> String {
        "refusing to delete orphans under \(root): it has no CACHEDIR.TAG of assetd's (owned by root, assetd's "
            + "user or the database's owner, one link), so the files there that nothing registers may be another program's; add the tag "
            + "(printf '\(signature)\\n\(assetdLine)\\n' > \(root)/\(fileName)) or pass --force (see assetd(8))"
    }
}
