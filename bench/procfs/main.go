// The peer of bench/mountstats_bench.py: prometheus/procfs's mountstats parser
// (the Go library node_exporter uses), timed in process on the same inputs as
// dnfsmon's parser. Built at bench time from the Go module proxy; nothing built
// is committed.
//
//	procfs-bench parse ROOT REPEATS      parse ROOT/1/mountstats REPEATS times
//	procfs-bench diff OLD NEW REPEATS    parse both, then per-mount and per-op
//	                                     deltas and the iostat figures
//
// Prints one JSON list: the CPU seconds (CLOCK_PROCESS_CPUTIME_ID, so time
// the machine gave to other processes is not counted) of each repeat.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

func cpuSeconds() float64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		panic(err)
	}
	return float64(ts.Sec) + float64(ts.Nsec)/1e9
}

func parse(root string) []*procfs.Mount {
	fs, err := procfs.NewFS(root)
	if err != nil {
		panic(err)
	}
	proc, err := fs.Proc(1)
	if err != nil {
		panic(err)
	}
	mounts, err := proc.MountStats()
	if err != nil {
		panic(err)
	}
	return mounts
}

func nfsStats(mounts []*procfs.Mount) map[string]*procfs.MountStatsNFS {
	found := make(map[string]*procfs.MountStatsNFS, len(mounts))
	for _, m := range mounts {
		if stats, ok := m.Stats.(*procfs.MountStatsNFS); ok {
			found[m.Mount] = stats
		}
	}
	return found
}

func perEvent(total, events uint64) float64 {
	if events == 0 {
		return 0
	}
	return float64(total) / float64(events)
}

// diff does what a monitoring agent does with two readings: pair the mounts
// and their ops, take the deltas over the interval (from Δage, as nfs-utils'
// mountstats iostat does) and the derived per-op figures. Returns a checksum
// so that the compiler cannot drop the work.
func diff(old, new []*procfs.Mount) float64 {
	before := nfsStats(old)
	sum := 0.0
	for mountpoint, now := range nfsStats(new) {
		then, ok := before[mountpoint]
		if !ok {
			continue
		}
		dt := (now.Age - then.Age).Seconds()
		if dt <= 0 {
			continue
		}
		sum += float64(now.Bytes.Read-then.Bytes.Read) / dt / 1024
		sum += float64(now.Bytes.Write-then.Bytes.Write) / dt / 1024
		sum += float64(now.Events.VFSOpen-then.Events.VFSOpen) / dt
		sum += float64(now.Events.InodeRevalidate-then.Events.InodeRevalidate) / dt
		previousOps := make(map[string]procfs.NFSOperationStats, len(then.Operations))
		for _, op := range then.Operations {
			previousOps[op.Operation] = op
		}
		for _, op := range now.Operations {
			prev, ok := previousOps[op.Operation]
			if !ok {
				continue
			}
			ops := op.Requests - prev.Requests
			wire := (op.BytesSent - prev.BytesSent) + (op.BytesReceived - prev.BytesReceived)
			retrans := (op.Transmissions - prev.Transmissions) - ops
			sum += float64(ops)/dt + float64(wire)/dt/1024 + perEvent(wire, ops)/1024
			sum += float64(retrans)/dt + 100*perEvent(retrans, ops)
			sum += perEvent(op.CumulativeQueueMilliseconds-prev.CumulativeQueueMilliseconds, ops)
			sum += perEvent(op.CumulativeTotalResponseMilliseconds-prev.CumulativeTotalResponseMilliseconds, ops)
			sum += perEvent(op.CumulativeTotalRequestMilliseconds-prev.CumulativeTotalRequestMilliseconds, ops)
			sum += float64(op.Errors-prev.Errors) / dt
		}
	}
	return sum
}

func main() {
	if len(os.Args) < 4 {
		fmt.Fprintln(os.Stderr, "usage: procfs-bench parse ROOT REPEATS | diff OLD NEW REPEATS")
		os.Exit(2)
	}
	repeats, err := strconv.Atoi(os.Args[len(os.Args)-1])
	if err != nil {
		panic(err)
	}
	seconds := make([]float64, 0, repeats)
	checksum := 0.0
	for i := 0; i < repeats; i++ {
		start := cpuSeconds()
		switch os.Args[1] {
		case "parse":
			checksum += float64(len(parse(os.Args[2])))
		case "diff":
			checksum += diff(parse(os.Args[2]), parse(os.Args[3]))
		default:
			panic("unknown mode " + os.Args[1])
		}
		seconds = append(seconds, cpuSeconds()-start)
	}
	fmt.Fprintf(os.Stderr, "checksum %g\n", checksum)
	if err := json.NewEncoder(os.Stdout).Encode(seconds); err != nil {
		panic(err)
	}
}
