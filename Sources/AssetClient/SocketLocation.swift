// Where the control socket is when nothing names it: the daemon's rule (assetd(8), CONFIGURATION),
// so that `assetctl` and `assetd` started by the same user meet without configuration.

/// The default control socket path.
public enum SocketLocation {
    /// The socket path for the root user.
    public static let systemPath = "/run/assetd/control.sock"

    /// As root `/run/assetd/control.sock`; otherwise `$XDG_RUNTIME_DIR/assetd.sock`, else
    /// `$XDG_STATE_HOME/assetd/control.sock` (`XDG_STATE_HOME` defaults to `~/.local/state`).
    /// Empty variables count as unset, as the XDG specification says.
    public static func defaultPath(environment: [String: String], isRoot: Bool, home: String?) -> String {
        if isRoot { return systemPath }
        func variable(_ name: String) -> String? {
            guard let v = environment[name], !v.isEmpty else { return nil }
            return v
        }
        if let runtime = variable("XDG_RUNTIME_DIR") { return join(runtime, "assetd.sock") }
        let state = variable("XDG_STATE_HOME") ?? join(variable("HOME") ?? home ?? "/", ".local/state")
        return join(join(state, "assetd"), "control.sock")
    }

    /// `explicit` if given, else `$ASSETD_SOCKET` if set, else `defaultPath`.
    public static func resolve(explicit: String?, environment: [String: String], isRoot: Bool, home: String?) -> String
    {
        if let explicit { return explicit }
        if let v = environment["ASSETD_SOCKET"], !v.isEmpty { return v }
        return defaultPath(environment: environment, isRoot: isRoot, home: home)
    }

    static func join(_ folder: String, _ name: String) -> String {
        folder.hasSuffix("/") ? folder + name : folder + "/" + name
    }
}
