// assetctl: the command-line client of assetd (assetctl(1)). The root command is AssetCtl.swift;
// each subcommand is a file under Commands/ named for its method.

AssetCtl.runMain()
