//! One file per subcommand: its clap arguments and a `run` that calls the library.
