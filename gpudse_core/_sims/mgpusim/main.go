// Command gpudse-mgpusim runs one MGPUSim timing simulation (Sun et al.,
// "MGPUSim: Enabling Multi-GPU Performance Modeling and Optimization",
// ISCA 2019) of an AMD GCN3 (R9 Nano class) GPU at one design point and
// prints one JSON object of metrics on stdout.
//
// The GPU is assembled with MGPUSim's R9 Nano GPU builder, whose settings
// (CUs per shader array, shader arrays, L2 size, memory banks, cache-line
// size, core frequency) are the design parameters. A configuration the
// builders cannot assemble exits with status 2 and one line on stderr that
// starts with "invalid configuration:". A failed simulation exits with 1.
//
// Runs are deterministic: the benchmarks seed their inputs themselves (the
// go directive 1.20 in go.mod keeps math/rand's Seed effective), so one
// point always gives the same cycles.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"time"
)

// config is one design point plus the workload to run on it.
type config struct {
	CUPerSA     int
	NumSA       int
	L2KB        int
	MemBanks    int
	LineBytes   int
	FreqMHz     int
	Benchmark   string
	Size        int
	Verify      bool
	CountInsts  bool
	ParallelSim bool
	CPUProfile  string
	MetricsFile string
}

var errHelp = flag.ErrHelp

// exitInvalid reports a configuration the builders cannot assemble.
func exitInvalid(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "invalid configuration: "+format+"\n", args...)
	os.Exit(2)
}

// parseFlags reads the settings from our own flag set: the MGPUSim runner
// package registers its own flags on the global set when imported.
func parseFlags() config {
	c := config{}
	flag := flag.NewFlagSet("gpudse-mgpusim", flag.ContinueOnError)
	flag.IntVar(&c.CUPerSA, "cu-per-sa", 4, "compute units per shader array (R9 Nano: 4)")
	flag.IntVar(&c.NumSA, "sa", 16, "shader arrays (R9 Nano: 16)")
	flag.IntVar(&c.L2KB, "l2-kb", 2048, "total L2 cache size in KiB, split over the memory banks (R9 Nano: 2048)")
	flag.IntVar(&c.MemBanks, "mem-banks", 16, "memory banks: L2 slices and DRAM controllers (R9 Nano: 16)")
	flag.IntVar(&c.LineBytes, "line", 64, "cache-line size in bytes for L1 and L2 (R9 Nano: 64)")
	flag.IntVar(&c.FreqMHz, "freq-mhz", 1000, "GPU core clock in MHz (R9 Nano: 1000)")
	flag.StringVar(&c.Benchmark, "benchmark", "matmul", "workload: "+benchmarkNames())
	flag.IntVar(&c.Size, "size", 0, "problem size (0: the benchmark's default; meaning per benchmark, see -list)")
	flag.BoolVar(&c.Verify, "verify", false, "check the kernel output against a CPU reference")
	flag.BoolVar(&c.CountInsts, "count-insts", true, "count executed instructions (traces every CU)")
	flag.BoolVar(&c.ParallelSim, "parallel", false, "use MGPUSim's parallel event engine")
	flag.StringVar(&c.CPUProfile, "cpuprofile", "", "write a Go CPU profile of the run to this file")
	flag.StringVar(&c.MetricsFile, "o", "", "also write the metrics JSON to this file")
	check := flag.String("check", "", "validate design points (JSON objects, one a line, keys cu_per_sa, sa, l2_kb, mem_banks, line, freq_mhz; - for stdin) on top of the other flags, print 'line N: reason' per invalid one, exit 2 if any; simulates nothing")
	plan := flag.Bool("plan", false, "print the benchmark's size and work-groups per kernel launch at -size as JSON and exit (simulates nothing)")
	list := flag.Bool("list", false, "print the benchmarks with their size meaning and default as JSON and exit")
	if err := flag.Parse(os.Args[1:]); err != nil {
		if err == errHelp {
			os.Exit(0)
		}
		exitInvalid("%v", err)
	}
	if flag.NArg() > 0 {
		exitInvalid("unexpected argument %q (all settings are -flags)", flag.Arg(0))
	}
	if *list {
		printBenchmarks()
		os.Exit(0)
	}
	if *plan {
		printPlan(c)
		os.Exit(0)
	}
	if *check != "" {
		runCheck(*check, c)
		os.Exit(0)
	}
	return c
}

func main() {
	c := parseFlags()
	if err := validate(&c); err != nil {
		exitInvalid("%v", err)
	}
	// Benchmarks print progress on stdout; keep stdout for the one JSON
	// object by sending everything else to stderr.
	stdout := os.Stdout
	os.Stdout = os.Stderr

	if c.CPUProfile != "" {
		f, err := os.Create(c.CPUProfile)
		if err != nil {
			exitInvalid("-cpuprofile: %v", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			exitInvalid("-cpuprofile: %v", err)
		}
		defer pprof.StopCPUProfile()
	}
	start := time.Now()
	m, err := simulate(c)
	if err != nil {
		fmt.Fprintf(os.Stderr, "simulation failed: %v\n", err)
		os.Exit(1)
	}
	m["wall_seconds"] = time.Since(start).Seconds()

	out, err := json.Marshal(m)
	if err != nil {
		fmt.Fprintf(os.Stderr, "simulation failed: encoding metrics: %v\n", err)
		os.Exit(1)
	}
	if c.MetricsFile != "" {
		if err := os.WriteFile(c.MetricsFile, append(out, '\n'), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "simulation failed: writing %s: %v\n", c.MetricsFile, err)
			os.Exit(1)
		}
	}
	fmt.Fprintln(stdout, string(out))
}
