// Config read from text rather than a file: the fuzzer's entry to the TOML parser, with the
// checks `DaemonConfig.load` makes.

extension DaemonConfig {
    /// Reads `text` as if it were the file `file` over the embedded defaults, as `load` does.
    public static func parse(_ text: String, file: String) throws(ConfigError) -> DaemonConfig {
        try ConfigParser(file: file, text: text).parse(defaults: embeddedDefaults())
    }
}
