"""The `kmc` command: one module per subcommand (check, ci, conform, explore, list, prove, and the
trace commands replay, show, render and graph), the summary it prints, its exit codes, and the CI
suite and JUnit output that `kmc ci` uses. app.py puts them together."""
