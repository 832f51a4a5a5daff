// What a SIGHUP refuses that a start accepts (assetd(8), SIGHUP): a reload applies at once, to
// a running cache, a file that may have been read while being written (a number cut short
// reads as a smaller one, the keys after the cut as their defaults) or mistyped.

extension DaemonConfig {
    /// Refuses, in place of the `running` settings, a new `[policy]` assetd warns of (a budget
    /// slip empties the cache at the next run; the policy in force, warned of at start, may be
    /// read again) and `enforce_ownership` turned off (a file cut before that key reads as
    /// false). A restart still applies either, the policy with its warning.
    public func checkReloadable(replacing running: DaemonConfig) throws(ConfigError) {
        let file = sourcePath ?? "(embedded defaults)"
        if let slip = policyWarnings.first, policy != running.policy {
            throw ConfigError(
                file: file, line: nil, key: nil,
                message: "a reload does not apply a [policy] assetd warns of (a restart does): \(slip)")
        }
        if running.enforceOwnership && !enforceOwnership {
            throw ConfigError(
                file: file, line: nil, key: "control.enforce_ownership",
                message: "a reload does not turn ownership checks off (a restart does): is the file complete?")
        }
    }
}
