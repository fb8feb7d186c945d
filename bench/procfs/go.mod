module dnfsmon.bench/procfs

go 1.26.0

require (
	github.com/prometheus/procfs v0.23.0
	golang.org/x/sys v0.49.0
)
