package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"gitlab.com/akita/mgpusim/v3/benchmarks"
	"gitlab.com/akita/mgpusim/v3/benchmarks/amdappsdk/matrixmultiplication"
	"gitlab.com/akita/mgpusim/v3/benchmarks/heteromark/aes"
	"gitlab.com/akita/mgpusim/v3/benchmarks/heteromark/fir"
	"gitlab.com/akita/mgpusim/v3/benchmarks/heteromark/kmeans"
	"gitlab.com/akita/mgpusim/v3/benchmarks/shoc/bfs"
	"gitlab.com/akita/mgpusim/v3/benchmarks/shoc/stencil2d"
	"gitlab.com/akita/mgpusim/v3/driver"
)

// benchmarkSpec describes one workload: what its single size knob means,
// the bounds it accepts, and how to make it for a driver.
type benchmarkSpec struct {
	Name         string `json:"name"`
	Suite        string `json:"suite"`
	SizeMeaning  string `json:"size_meaning"`
	DefaultSize  int    `json:"default_size"`
	MinSize      int    `json:"min_size"`
	MaxSize      int    `json:"max_size"`
	SizeMultiple int    `json:"size_multiple"`
	// WorkExponent: the simulated work grows as size to this power (an N x N
	// matrix product as N^3), which scales a point's timeout.
	WorkExponent int `json:"work_exponent"`
	make         func(d *driver.Driver, size int) benchmarks.Benchmark
	// workGroups is how many work-groups each kernel launch has at a size
	// (from the benchmark's launch geometry; the run's metrics report the
	// launched count).
	workGroups func(size int) int
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// The default sizes launch at least 64 work-groups per kernel, so the R9
// Nano's 64 CUs all get work (docs/simulations.md measures 16 against 64 CUs
// at these sizes), while one timing simulation stays at about 2 CPU minutes
// at most; the maxima bound the work one point can imply.
var benchmarkSpecs = []benchmarkSpec{
	{
		Name: "matmul", Suite: "AMD APP SDK", SizeMeaning: "N for an N x N by N x N single-precision product",
		DefaultSize: 256, MinSize: 32, MaxSize: 1024, SizeMultiple: 32, WorkExponent: 3,
		workGroups: func(n int) int { return (n / 32) * (n / 32) },
		make: func(d *driver.Driver, n int) benchmarks.Benchmark {
			b := matrixmultiplication.NewBenchmark(d)
			b.X, b.Y, b.Z = uint32(n), uint32(n), uint32(n)
			return b
		},
	},
	{
		Name: "fir", Suite: "Hetero-Mark", SizeMeaning: "input samples filtered by a 16-tap FIR",
		DefaultSize: 131072, MinSize: 256, MaxSize: 1 << 22, SizeMultiple: 256, WorkExponent: 1,
		workGroups: func(n int) int { return n / 256 },
		make: func(d *driver.Driver, n int) benchmarks.Benchmark {
			b := fir.NewBenchmark(d)
			b.Length = n
			return b
		},
	},
	{
		Name: "aes", Suite: "Hetero-Mark", SizeMeaning: "bytes encrypted with AES-256",
		DefaultSize: 262144, MinSize: 1024, MaxSize: 1 << 22, SizeMultiple: 1024, WorkExponent: 1,
		workGroups: func(n int) int { return n / 1024 },
		make: func(d *driver.Driver, n int) benchmarks.Benchmark {
			b := aes.NewBenchmark(d)
			b.Length = n
			return b
		},
	},
	{
		Name: "kmeans", Suite: "Hetero-Mark", SizeMeaning: "points (32 features, 5 clusters, 5 iterations)",
		DefaultSize: 4096, MinSize: 64, MaxSize: 1 << 18, SizeMultiple: 64, WorkExponent: 1,
		workGroups: func(n int) int { return ceilDiv(n, 64) },
		make: func(d *driver.Driver, n int) benchmarks.Benchmark {
			b := kmeans.NewBenchmark(d)
			b.NumPoints, b.NumClusters, b.NumFeatures, b.MaxIter = n, 5, 32, 5
			return b
		},
	},
	{
		Name: "bfs", Suite: "SHOC", SizeMeaning: "graph nodes (random graph of degree 3)",
		DefaultSize: 65536, MinSize: 64, MaxSize: 1 << 18, SizeMultiple: 1, WorkExponent: 1,
		workGroups: func(n int) int { return ceilDiv(n, 1024) },
		make: func(d *driver.Driver, n int) benchmarks.Benchmark {
			b := bfs.NewBenchmark(d)
			b.NumNode, b.Degree, b.MaxDepth = n, 3, 1<<30
			return b
		},
	},
	{
		Name: "stencil2d", Suite: "SHOC", SizeMeaning: "N for an N x N interior grid, 5 iterations",
		DefaultSize: 512, MinSize: 64, MaxSize: 4096, SizeMultiple: 64, WorkExponent: 2,
		workGroups: func(n int) int { return (n / 32) * (n / 32) },
		make: func(d *driver.Driver, n int) benchmarks.Benchmark {
			b := stencil2d.NewBenchmark(d)
			b.NumIteration, b.NumRows, b.NumCols = 5, n+2, n+2
			return b
		},
	},
}

func benchmarkByName(name string) (benchmarkSpec, bool) {
	for _, s := range benchmarkSpecs {
		if s.Name == name {
			return s, true
		}
	}
	return benchmarkSpec{}, false
}

func benchmarkNames() string {
	names := make([]string, len(benchmarkSpecs))
	for i, s := range benchmarkSpecs {
		names[i] = s.Name
	}
	return strings.Join(names, ", ")
}

func printBenchmarks() {
	out, err := json.Marshal(benchmarkSpecs)
	if err != nil {
		fmt.Fprintf(os.Stderr, "encoding benchmarks: %v\n", err)
		os.Exit(1)
	}
	fmt.Println(string(out))
}

// printPlan prints what one run at c's benchmark and size launches, after
// validating them (an invalid setting exits 2 like a run).
func printPlan(c config) {
	if err := validate(&c); err != nil {
		exitInvalid("%v", err)
	}
	spec, _ := benchmarkByName(c.Benchmark)
	out, _ := json.Marshal(map[string]int{"size": c.Size, "work_groups": spec.workGroups(c.Size),
		"default_size": spec.DefaultSize, "work_exponent": spec.WorkExponent})
	fmt.Println(string(out))
}
