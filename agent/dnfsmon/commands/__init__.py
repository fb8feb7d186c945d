"""The commands of `dnfsmon`, one module each, imported by cli.main only when that command runs."""
