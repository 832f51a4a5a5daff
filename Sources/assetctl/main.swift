// assetctl: the command-line client of assetd (SPEC §7). The root command is AssetCtl.swift;
// each subcommand is a file under Commands/ named for its method.

AssetCtl.runMain()
