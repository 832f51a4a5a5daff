// Root hygiene, at start and on --check-config (assetd(8)): everything under a root that no
// object holds is an orphan, so a root must be a folder of assetd's own. A configured root
// that is missing, is not a folder, or is (or contains) a folder other programs share is a
// configuration error; the embedded default root is created, with assetd's CACHEDIR.TAG.

import AssetStore
import Foundation

/// Why the roots stop start-up: a configuration error (exit 78), or a default root the disk
/// does not let assetd create now (exit 1, so a supervisor tries again once there is room).
public enum RootsError: Error, Sendable, CustomStringConvertible {
    case config(ConfigError)
    case unavailable(String)

    public var description: String {
        switch self {
        case .config(let e): e.description
        case .unavailable(let message): message
        }
    }

    /// assetd's exit status.
    public var exitStatus: Int32 {
        if case .config = self { return 78 }
        return 1
    }
}

extension DaemonConfig {
    /// Checks every root; with `create`, makes the default root (and its missing parents)
    /// when it is missing and tags it when it is not tagged. Other configured roots are never
    /// created nor tagged: a folder the admin chose may hold files that are not assetd's.
    /// Returns warnings for the log: a default root that exists but cannot be tagged now.
    @discardableResult
    public func prepareRoots(
        create: Bool, uid: UInt32 = getuid(), environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(RootsError) -> [String] {
        try prepareRoots(create: create, uid: uid, environment: environment, fileSystemType: { fileSystemType(of: $0) })
    }

    /// `prepareRoots`, reading each root's file system type with `fileSystemType` and the
    /// mounts with `mounts` (tests).
    func prepareRoots(
        create: Bool, uid: UInt32 = getuid(), environment: [String: String] = ProcessInfo.processInfo.environment,
        fileSystemType: (String) -> Int64?, mounts: () -> MountTable? = MountTable.current
    ) throws(RootsError) -> [String] {
        let shared = RootHygiene.sharedFolders(uid: uid, environment: environment, roots: roots)
        // The default root is assetd's by name, also when the config file spells it out
        // (etc/assetd.toml sets every key to its default).
        let defaults = Set(
            DaemonConfig.embeddedDefaults(uid: uid, environment: environment).roots.map(RootHygiene.lexical))
        var warnings = [String]()
        // Read once: a bind mount shows a root's folder elsewhere (RootHygiene+Store.swift).
        let table = mounts()
        if table == nil {
            warnings.append(
                "/proc/self/mountinfo cannot be read: a bind mount that shows a root's folder at another root,"
                    + " or at the database's, is not seen (assetd.toml(5), files.roots)")
        }
        for root in roots {
            let isDefault = rootsOrigin == .embeddedDefault || defaults.contains(RootHygiene.lexical(root))
            if isDefault, create, let warning = try createDefault(root, uid: uid) { warnings.append(warning) }
            var st = stat()
            if stat(root, &st) != 0 {
                let e = errno
                // Only --check-config gets here with a missing default root: start creates it.
                if e == ENOENT, isDefault { continue }
                throw .config(
                    rootError(
                        e == ENOENT
                            ? "\(root) does not exist: create it (assetd creates only its default root)"
                            : "\(root) cannot be reached: \(String(cString: strerror(e)))"))
            }
            guard st.st_mode & S_IFMT == S_IFDIR else { throw .config(rootError("\(root) is not a folder")) }
            if let why = RootHygiene.sharing(root, shared) { throw .config(rootError(why)) }
            if let why = RootHygiene.replaceable(root, uid: uid) { throw .config(rootError(why)) }
            if let why = RootHygiene.foldsCase(root, type: fileSystemType(root)) { throw .config(rootError(why)) }
            do throws(ConfigError) { try refuseHolding(root, table: table) } catch { throw .config(error) }
        }
        return warnings
    }

    /// What start would refuse about the roots' markers, and what roots it would start
    /// unbound (Store+RootBinding.swift), for --check-config.
    public func rootBindingProblems() -> (refusals: [String], warnings: [String]) {
        Store.rootBindingProblems(database: storePath, roots: roots, adopt: adoptRoots)
    }

    /// True when `path` names one of the roots once `.`, `..` and repeated slashes are folded.
    public func isRoot(_ path: String) -> Bool {
        roots.contains { RootHygiene.lexical($0).utf8.elementsEqual(RootHygiene.lexical(path).utf8) }
    }

    /// Refuses (a configuration error, exit 78) a root that holds the database's folder, the
    /// socket's folder or the config file (RootHygiene+Store.swift), also through a bind
    /// mount: at start, and again on SIGHUP, when a mount made since may show one there.
    public func checkRootsHoldNothingOfOurs() throws(ConfigError) {
        let table = MountTable.current()
        for root in roots { try refuseHolding(root, table: table) }
    }

    private func refuseHolding(_ root: String, table: MountTable?) throws(ConfigError) {
        for kept in keptFromRoots {
            if let why = RootHygiene.holds(root, kept, table: table) { throw rootError(why) }
        }
    }

    private func rootError(_ message: String) -> ConfigError {
        var line: Int?
        if case .configured(let l) = rootsOrigin { line = l }
        let origin = rootsOrigin == .embeddedDefault ? " (the embedded default)" : ""
        return ConfigError(
            file: sourcePath ?? "(embedded defaults)", line: line, key: "files.roots",
            message: "root " + message + origin)
    }

    /// mkdir -p for the default root: parents 0700 (as XDG base folders are made), the root
    /// 0755 as root (clients read their files through it) and 0700 for a user's daemon.
    /// A disk that refuses (full, read-only, permissions) is no configuration error: the
    /// root that cannot be made stops start-up with exit 1; one that cannot be tagged is a
    /// warning (verify --delete-orphans refuses an untagged root). Other failures are left
    /// to the caller's checks.
    private func createDefault(_ root: String, uid: UInt32) throws(RootsError) -> String? {
        var made: String?
        var path = ""
        for part in root.split(separator: "/") {
            path += "/" + part
            if mkdir(path, 0o700) == 0 {
                made = path
            } else if case let e = errno, e != EEXIST {
                guard RootHygiene.refusedByDisk(e) else { return nil }  // judged by the caller
                throw .unavailable(
                    "the default root \(root) cannot be created: mkdir \(path): \(String(cString: strerror(e)))")
            }
        }
        if made == root { chmod(root, uid == 0 ? 0o755 : 0o700) }
        var st = stat()
        guard lstat(root, &st) == 0, st.st_mode & S_IFMT == S_IFDIR else { return nil }  // judged by the caller
        guard !CacheDirectoryTag.isPresent(in: root), let failure = CacheDirectoryTag.write(in: root) else {
            return nil
        }
        return "the default root \(root) cannot be tagged: \(failure.call): \(String(cString: strerror(failure.errno)))"
            + "; verify --delete-orphans refuses it until it has its CACHEDIR.TAG (assetd writes it at the next start)"
    }
}

/// The folders other programs share, and whether a root is (or contains) one.
enum RootHygiene {
    /// An error of the disk or its permissions, which goes away without a config change.
    static func refusedByDisk(_ e: Int32) -> Bool {
        [ENOSPC, EDQUOT, EROFS, EACCES, EPERM, EIO].contains(e)
    }

    /// System folders, every home folder in the password database, and this user's home,
    /// cache, config, data, state and runtime folders; not the home of `uid` (nor the
    /// folders named after it) when that home is one of `roots` or inside one.
    static func sharedFolders(
        uid: UInt32, environment: [String: String], roots: [String] = [],
        homes: [(uid: UInt32, home: String)] = passwdHomes()
    ) -> [String] {
        var out = [
            "/", "/tmp", "/var", "/var/tmp", "/var/cache", "/var/lib", "/var/log", "/var/spool", "/var/mail",
            "/var/run", "/var/lock", "/var/opt", "/var/local", "/var/backups", "/home", "/root", "/usr", "/usr/local",
            "/usr/share", "/usr/lib", "/usr/bin", "/usr/sbin", "/etc", "/run", "/run/user", "/dev", "/dev/shm", "/proc",
            "/sys", "/boot", "/opt", "/srv", "/mnt", "/media", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
            "/snap", "/lost+found",
        ]
        // The home of the user assetd runs as, when it is a root or inside one (a packaged
        // `assetd` user whose home is /var/cache/assetd), is assetd's own folder. Another
        // user's home there is not.
        let own = { (home: String) in
            let h = Array(lexical(home).utf8)
            return roots.contains { r in
                let r = Array(lexical(r).utf8)
                return h == r || h.starts(with: r == [UInt8(ascii: "/")] ? r : r + [UInt8(ascii: "/")])
            }
        }
        var ownHome: String?
        for (user, home) in homes {
            if user == uid, own(home) {
                ownHome = lexical(home)
            } else {
                out.append(home)
            }
        }
        let env = { (k: String) in environment[k].flatMap { $0.isEmpty ? nil : $0 } }
        let home = env("HOME") ?? NSHomeDirectory()
        if lexical(home) != ownHome {
            out += [
                home, home + "/.cache", home + "/.config", home + "/.local", home + "/.local/share",
                home + "/.local/state",
            ]
        }
        out += ["XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR"].compactMap(
            env)
        return out
    }

    /// Every user's home folder in the password database.
    static func passwdHomes() -> [(uid: UInt32, home: String)] {
        var out = [(uid: UInt32, home: String)]()
        setpwent()
        while let pw = getpwent() {
            if let dir = pw.pointee.pw_dir, dir.pointee != 0 { out.append((pw.pointee.pw_uid, String(cString: dir))) }
        }
        endpwent()
        return out
    }

    /// Why `root` is refused as a shared folder, or nil. Compared as bytes after resolving
    /// symlinks and `..` (realpath) on both sides, so `/var/cache/../tmp` and a symlink to /tmp
    /// are caught; a root that contains a shared folder (`/var` holds `/var/cache`) is refused too.
    static func sharing(_ root: String, _ shared: [String]) -> String? {
        let spelled = Array(lexical(root).utf8)
        let resolved = resolve(root).map { Array($0.utf8) } ?? spelled
        let through =
            resolved == spelled ? "" : ", through a symlink or \"..\" (\(String(decoding: resolved, as: UTF8.self))),"
        let below = resolved == [UInt8(ascii: "/")] ? resolved : resolved + [UInt8(ascii: "/")]
        // Kernel interfaces and the system's own files: no folder inside them is assetd's.
        for tree in systemTrees {
            let prefix = Array((tree + "/").utf8)
            if resolved.starts(with: prefix) || spelled.starts(with: prefix) {
                return "\(root)\(through) is inside \(tree), which holds the system's own files or the kernel's: "
                    + "use a folder of assetd's own, such as /var/cache/assetd"
            }
        }
        for folder in shared {
            for candidate in Set([lexical(folder), resolve(folder)].compactMap { $0 }).map({ Array($0.utf8) }) {
                if candidate == resolved {
                    let what = through.isEmpty && candidate == spelled ? "" : "\(through) \(folder),"
                    return "\(root) is\(what) a folder other programs share: everything there that no object "
                        + "holds would be an orphan; use a folder of assetd's own inside it, such as \(folder == "/" ? "" : folder)/assetd"
                }
                if candidate.starts(with: below) {
                    return
                        "\(root)\(through) contains \(folder), a folder other programs share: use a folder of assetd's own"
                }
            }
        }
        return nil
    }

    /// Folders in which no root may lie at any depth: pseudo-filesystems (a file there is a
    /// kernel setting) and the system's installed files and configuration.
    static let systemTrees = [
        "/proc", "/sys", "/dev", "/etc", "/usr", "/boot", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
    ]

    /// realpath, or nil when the path cannot be resolved.
    static func resolve(_ path: String) -> String? {
        guard let r = realpath(path, nil) else { return nil }
        defer { free(r) }
        return String(cString: r)
    }

    /// `.`, `..` and repeated slashes folded, without looking at the disk.
    static func lexical(_ path: String) -> String {
        var parts = [Substring]()
        for p in path.split(separator: "/") where p != "." {
            if p == ".." { _ = parts.popLast() } else { parts.append(p) }
        }
        return "/" + parts.joined(separator: "/")
    }
}
