// The daemon is configured and driven in AssetService's terms (DaemonConfig, MethodTable), so
// importing AssetDaemon brings AssetService with it.

@_exported import AssetService
