// The latest InfluxDB 1.x the tests run beside 1.8.10 (tests/go_servers.py builds it).
// A module of ours because InfluxData's pkg-config wrapper, which builds Flux's
// Rust library for cgo, looks for github.com/influxdata/flux among the main
// module's requirements: the versions are InfluxDB v1.13.2's own.
module dnfsmon.test/influxd

go 1.26

require (
	github.com/influxdata/flux v0.200.0
	github.com/influxdata/influxdb v1.13.2
	github.com/influxdata/pkg-config v0.3.0
)
