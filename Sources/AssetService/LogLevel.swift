// `log.level` as the config file spells it. The config model keeps its own type so that
// AssetService (and assetctl --db) need no logging library; the daemon converts it to its
// logger's level by name.

/// How much the daemon logs, least to most severe.
public enum LogLevel: String, Sendable, CaseIterable {
    case trace, debug, info, notice, warning, error, critical
}
