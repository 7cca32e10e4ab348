package main

import "fmt"

// dramBytes is the GPU memory the R9 Nano builder gives each GPU (4 GiB); it
// is split evenly over the memory banks.
const dramBytes = 4 << 30

// dramRankBytes is one DRAM rank of the builder's HBM controller: 64
// columns x 16384 rows x 128-bit devices, 2 devices per rank, 4 banks.
const dramRankBytes = 64 * 16384 * 128 / 8 * 2 * 4

// l2Ways is the L2 associativity the builder uses.
const l2Ways = 16

// log2Interleave is the address interleaving granularity over memory banks
// (128 bytes) that MGPUSim's R9 Nano platform sets.
const log2Interleave = 7

// minLine is the smallest cache line that works: the compute units' vector
// memory unit fetches 64 bytes at once, and a 32-byte line makes the L1
// return a short block (MGPUSim panics: "slice bounds out of range [:64]").
const minLine = 64

func isPow2(n int) bool { return n > 0 && n&(n-1) == 0 }

func log2(n int) uint64 {
	r := uint64(0)
	for n > 1 {
		n >>= 1
		r++
	}
	return r
}

// validate rejects settings the builders would panic on or assemble wrongly,
// with the reason, and fills in the benchmark's default size.
func validate(c *config) error {
	if c.CUPerSA < 1 || c.CUPerSA > 16 {
		return fmt.Errorf("-cu-per-sa=%d: must be 1..16", c.CUPerSA)
	}
	if c.NumSA < 1 || c.NumSA > 64 {
		return fmt.Errorf("-sa=%d: must be 1..64", c.NumSA)
	}
	if !isPow2(c.MemBanks) {
		return fmt.Errorf("-mem-banks=%d: must be a power of two (4 GiB of DRAM is split evenly over the banks)", c.MemBanks)
	}
	if dramBytes/c.MemBanks < dramRankBytes {
		return fmt.Errorf("-mem-banks=%d: at most %d banks (each bank's DRAM controller needs at least one %d MiB rank)",
			c.MemBanks, dramBytes/dramRankBytes, dramRankBytes>>20)
	}
	if !isPow2(c.LineBytes) || c.LineBytes < minLine || c.LineBytes > 1<<log2Interleave {
		return fmt.Errorf("-line=%d: must be a power of two from %d (the compute units' 64-byte accesses) to %d bytes (the bank interleaving granularity)",
			c.LineBytes, minLine, 1<<log2Interleave)
	}
	if c.L2KB < 1 || c.L2KB > 64*1024 {
		return fmt.Errorf("-l2-kb=%d: must be 1..65536", c.L2KB)
	}
	perBank := c.L2KB * 1024 / c.MemBanks
	if c.L2KB*1024%c.MemBanks != 0 || perBank%(l2Ways*c.LineBytes) != 0 || !isPow2(perBank/(l2Ways*c.LineBytes)) {
		return fmt.Errorf("-l2-kb=%d over %d banks gives %d bytes per L2 slice: must be a power-of-two number of %d-way sets of %d-byte lines",
			c.L2KB, c.MemBanks, perBank, l2Ways, c.LineBytes)
	}
	if c.FreqMHz < 100 || c.FreqMHz > 4000 {
		return fmt.Errorf("-freq-mhz=%d: must be 100..4000", c.FreqMHz)
	}
	spec, ok := benchmarkByName(c.Benchmark)
	if !ok {
		return fmt.Errorf("-benchmark=%q: unknown, choose one of %s", c.Benchmark, benchmarkNames())
	}
	if c.Size == 0 {
		c.Size = spec.DefaultSize
	}
	if c.Size < spec.MinSize || c.Size > spec.MaxSize {
		return fmt.Errorf("-size=%d for %s (%s): must be %d..%d", c.Size, spec.Name, spec.SizeMeaning, spec.MinSize, spec.MaxSize)
	}
	if spec.SizeMultiple > 1 && c.Size%spec.SizeMultiple != 0 {
		return fmt.Errorf("-size=%d for %s (%s): must be a multiple of %d", c.Size, spec.Name, spec.SizeMeaning, spec.SizeMultiple)
	}
	return nil
}
