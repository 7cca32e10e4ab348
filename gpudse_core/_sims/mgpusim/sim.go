package main

import (
	"fmt"
	"strings"
	"sync"

	"gitlab.com/akita/akita/v3/sim"
	"gitlab.com/akita/akita/v3/tracing"
	"gitlab.com/akita/mem/v3/mem"
	"gitlab.com/akita/mem/v3/vm"
	"gitlab.com/akita/mem/v3/vm/mmu"
	"gitlab.com/akita/mgpusim/v3/driver"
	"gitlab.com/akita/mgpusim/v3/samples/runner"
	"gitlab.com/akita/mgpusim/v3/timing/cu"
	"gitlab.com/akita/noc/v3/networking/pcie"
)

// gpuID is the driver's number for the one simulated GPU (0 is the CPU).
const gpuID = 1

// log2PageSize is the 4 KiB page of the GPU's virtual memory.
const log2PageSize = 12

// machine is one host with one GPU at the design point, wired over PCIe 3.0
// x16 the way a discrete R9 Nano is.
type machine struct {
	engine sim.Engine
	driver *driver.Driver
	gpu    *runner.GPU
}

func buildMachine(c config) machine {
	var engine sim.Engine
	if c.ParallelSim {
		engine = sim.NewParallelEngine()
	} else {
		engine = sim.NewSerialEngine()
	}
	// Host memory and the GPU's memory share one backing store, addressed
	// 4 GiB apart.
	storage := mem.NewStorage(2 * dramBytes)

	pageTable := vm.NewPageTable(log2PageSize)
	ioMMU := mmu.MakeBuilder().
		WithEngine(engine).
		WithFreq(1 * sim.GHz).
		WithPageWalkingLatency(100).
		WithLog2PageSize(log2PageSize).
		WithPageTable(pageTable).
		Build("MMU")

	drv := driver.MakeBuilder().
		WithEngine(engine).
		WithPageTable(pageTable).
		WithLog2PageSize(log2PageSize).
		WithGlobalStorage(storage).
		Build("Driver")
	ioMMU.MigrationServiceProvider = drv.GetPortByName("MMU")

	bus := pcie.NewConnector().
		WithEngine(engine).
		WithVersion(3, 16).
		WithSwitchLatency(140)
	bus.CreateNetwork("PCIe")
	root := bus.AddRootComplex([]sim.Port{
		drv.GetPortByName("GPU"),
		drv.GetPortByName("MMU"),
		ioMMU.GetPortByName("Migration"),
		ioMMU.GetPortByName("Top"),
	})
	sw := bus.AddSwitch(root)

	gpu := runner.MakeR9NanoGPUBuilder().
		WithEngine(engine).
		WithMMU(ioMMU).
		WithFreq(sim.Freq(c.FreqMHz)*sim.MHz).
		WithNumCUPerShaderArray(c.CUPerSA).
		WithNumShaderArray(c.NumSA).
		WithNumMemoryBank(c.MemBanks).
		WithLog2MemoryBankInterleavingSize(log2Interleave).
		WithLog2CacheLineSize(log2(c.LineBytes)).
		WithL2CacheSize(uint64(c.L2KB)*mem.KB).
		WithLog2PageSize(log2PageSize).
		WithGlobalStorage(storage).
		WithMemAddrOffset(gpuID*dramBytes).
		Build(fmt.Sprintf("GPU[%d]", gpuID), gpuID)
	drv.RegisterGPU(gpu.Domain.GetPortByName("CommandProcessor"),
		driver.DeviceProperties{
			CUCount:  c.CUPerSA * c.NumSA,
			DRAMSize: dramBytes,
		})
	gpu.CommandProcessor.Driver = drv.GetPortByName("GPU")

	// With one GPU there is no peer to reach, but the remote-access engines
	// still look their peers up by address: entry 0 is the host.
	rdma := &mem.BankedLowModuleFinder{BankSize: dramBytes}
	rdma.LowModules = []sim.Port{nil, gpu.RDMAEngine.ToOutside}
	gpu.RDMAEngine.RemoteRDMAAddressTable = rdma
	pmc := &mem.BankedLowModuleFinder{BankSize: dramBytes}
	pmc.LowModules = []sim.Port{nil, gpu.PMC.GetPortByName("Remote")}
	gpu.PMC.RemotePMCAddressTable = pmc
	drv.RemotePMCPorts = append(drv.RemotePMCPorts, gpu.PMC.GetPortByName("Remote"))

	bus.PlugInDevice(sw, gpu.Domain.Ports())
	bus.EstablishRoute()

	return machine{engine: engine, driver: drv, gpu: gpu}
}

// cacheCounter counts a cache's access outcomes from its trace steps.
type cacheCounter struct {
	tracer *tracing.StepCountTracer
}

func (c cacheCounter) count(step string) uint64 {
	return c.tracer.GetStepCount(step)
}

// cacheStats sums hits, misses and MSHR hits (a miss to a line already
// being fetched) over a level's caches.
func cacheStats(counters []cacheCounter) (hits, misses, mshrHits uint64) {
	for _, c := range counters {
		hits += c.count("read-hit") + c.count("write-hit")
		misses += c.count("read-miss") + c.count("write-miss")
		mshrHits += c.count("read-mshr-hit") + c.count("write-mshr-hit")
	}
	return
}

func watchCaches(caches []runner.TraceableComponent) []cacheCounter {
	out := make([]cacheCounter, 0, len(caches))
	for _, cache := range caches {
		t := tracing.NewStepCountTracer(func(tracing.Task) bool { return true })
		tracing.CollectTrace(cache, t)
		out = append(out, cacheCounter{tracer: t})
	}
	return out
}

// dramCounter counts completed read and write requests at the DRAM
// controllers and their bytes.
type dramCounter struct {
	sync.Mutex
	open                  map[string]tracing.Task
	reads, writes         uint64
	readBytes, writeBytes uint64
}

func (t *dramCounter) StartTask(task tracing.Task) {
	t.Lock()
	t.open[task.ID] = task
	t.Unlock()
}

func (t *dramCounter) StepTask(tracing.Task) {}

func (t *dramCounter) EndTask(task tracing.Task) {
	t.Lock()
	defer t.Unlock()
	begun, ok := t.open[task.ID]
	if !ok {
		return
	}
	delete(t.open, task.ID)
	switch req := begun.Detail.(type) {
	case *mem.ReadReq:
		t.reads++
		t.readBytes += req.AccessByteSize
	case *mem.WriteReq:
		t.writes++
		t.writeBytes += uint64(len(req.Data))
	}
}

// instCounter counts instructions the compute units complete, and of them
// the vector-ALU ones.
type instCounter struct {
	sync.Mutex
	open        map[string]bool
	insts, valu uint64
}

func (t *instCounter) StartTask(task tracing.Task) {
	if task.Kind != "inst" {
		return
	}
	t.Lock()
	t.open[task.ID] = task.What == "VALU"
	t.Unlock()
}

func (t *instCounter) StepTask(tracing.Task) {}

func (t *instCounter) EndTask(task tracing.Task) {
	t.Lock()
	defer t.Unlock()
	isVALU, ok := t.open[task.ID]
	if !ok {
		return
	}
	delete(t.open, task.ID)
	t.insts++
	if isVALU {
		t.valu++
	}
}

// simulate runs the benchmark on a machine built for c and returns the
// metrics: simulated kernel time and cycles, cache hit rates per level,
// DRAM transactions and executed instructions.
func simulate(c config) (m map[string]interface{}, err error) {
	defer func() {
		// The builders and benchmarks report what they cannot do by
		// panicking; turn that into one line.
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	spec, _ := benchmarkByName(c.Benchmark)
	mc := buildMachine(c)

	kernelTime := tracing.NewBusyTimeTracer(mc.engine, func(task tracing.Task) bool {
		return task.What == "*driver.LaunchKernelCommand"
	})
	tracing.CollectTrace(mc.driver, kernelTime)
	l1v := watchCaches(mc.gpu.L1VCaches)
	l2 := watchCaches(mc.gpu.L2Caches)
	dram := &dramCounter{open: map[string]tracing.Task{}}
	for _, ctrl := range mc.gpu.MemControllers {
		tracing.CollectTrace(ctrl, dram)
	}
	insts := &instCounter{open: map[string]bool{}}
	var cpi []*cu.CPIStackTracer
	if c.CountInsts {
		for _, unit := range mc.gpu.CUs {
			tracing.CollectTrace(unit, insts)
		}
		cpi = cpiStacks(mc.engine, mc.gpu.CUs)
	}
	kernels := newKernelTracer(mc.engine)
	tracing.CollectTrace(mc.gpu.CommandProcessor, kernels)
	occupancy := newOccupancyTracer(mc.engine)
	for _, unit := range mc.gpu.CUs {
		tracing.CollectTrace(unit, occupancy)
	}
	simdBusy := busyTimes(mc.engine, mc.gpu.SIMDs)
	l1vTLB := watchAll(mc.gpu.L1VTLBs)
	l2TLB := watchAll(mc.gpu.L2TLBs)

	bench := spec.make(mc.driver, c.Size)
	bench.SelectGPU([]int{gpuID})
	mc.driver.Run()
	bench.Run()
	verified := false
	if c.Verify {
		bench.Verify()
		verified = true
	}
	mc.driver.Terminate()
	mc.engine.Finished()
	// A launch command whose end the driver never traced is counted up to
	// the end of the simulation rather than left out: the busy-time tracer
	// adds nothing while any filtered task is open, and once (1 run in 166)
	// reported 0 s for a fir run whose kernel ran 24 µs.
	kernelTime.TerminateAllTasks(mc.engine.CurrentTime())

	seconds := float64(kernelTime.BusyTime())
	m = map[string]interface{}{
		"benchmark":       spec.Name,
		"size":            c.Size,
		"cu_per_sa":       c.CUPerSA,
		"shader_arrays":   c.NumSA,
		"cus":             c.CUPerSA * c.NumSA,
		"l2_kb":           c.L2KB,
		"mem_banks":       c.MemBanks,
		"line_bytes":      c.LineBytes,
		"freq_mhz":        c.FreqMHz,
		"kernel_time_s":   seconds,
		"kernel_cycles":   seconds * float64(c.FreqMHz) * 1e6,
		"simulated_end_s": float64(mc.engine.CurrentTime()),
		"verified":        verified,
	}
	for _, level := range []struct {
		name     string
		counters []cacheCounter
	}{{"l1v", l1v}, {"l2", l2}} {
		hits, misses, mshr := cacheStats(level.counters)
		m[level.name+"_hits"] = hits
		m[level.name+"_misses"] = misses
		m[level.name+"_mshr_hits"] = mshr
		if total := hits + misses + mshr; total > 0 {
			m[level.name+"_hit_rate"] = float64(hits) / float64(total)
		} else {
			m[level.name+"_hit_rate"] = nil
		}
	}
	m["dram_reads"] = dram.reads
	m["dram_writes"] = dram.writes
	m["dram_read_bytes"] = dram.readBytes
	m["dram_write_bytes"] = dram.writeBytes
	addKernelMetrics(m, c, kernels, occupancy, simdBusy)
	for _, level := range []struct {
		name     string
		counters []*tracing.StepCountTracer
	}{{"l1v_tlb", l1vTLB}, {"l2_tlb", l2TLB}} {
		hits, misses, mshr := tlbStats(level.counters)
		m[level.name+"_hits"] = hits
		m[level.name+"_misses"] = misses
		if total := hits + misses + mshr; total > 0 {
			m[level.name+"_hit_rate"] = float64(hits) / float64(total)
		}
	}
	if exec := kernels.execSeconds(); exec > 0 {
		m["dram_bandwidth_gbs"] = float64(dram.readBytes+dram.writeBytes) / exec / 1e9
	}
	if c.CountInsts {
		for k, v := range meanCPIStack(cpi) {
			m["cpi_"+strings.ToLower(k)] = v
		}
		m["instructions"] = insts.insts
		m["valu_instructions"] = insts.valu
		if cycles := seconds * float64(c.FreqMHz) * 1e6; cycles > 0 {
			m["ipc"] = float64(insts.insts) / cycles
		}
	}
	return m, nil
}

// addKernelMetrics adds the kernels' execution at the command processor
// (kernel_exec_s: without the driver's launch round trip over PCIe), each
// code object's share, the work-groups launched, the achieved occupancy
// (resident wavefronts over the CUs' 40 slots, averaged over the execution)
// and the SIMDs' mean busy fraction.
func addKernelMetrics(m map[string]interface{}, c config, k *kernelTracer, o *occupancyTracer,
	simds []*tracing.BusyTimeTracer) {
	exec := k.execSeconds()
	m["kernel_exec_s"] = exec
	m["kernel_exec_cycles"] = exec * float64(c.FreqMHz) * 1e6
	if launch, ok := m["kernel_time_s"].(float64); ok {
		m["launch_overhead_s"] = launch - exec
	}
	m["kernel_launches"] = len(k.spans)
	m["kernel_codes"] = len(k.codes)
	for code, secs := range k.perCode() {
		m[fmt.Sprintf("kernel%d_exec_s", code)] = secs
	}
	m["kernels"] = k.spans
	m["work_groups"] = o.workGroups
	m["wavefronts"] = o.wavefronts
	cus := c.CUPerSA * c.NumSA
	if exec > 0 {
		m["occupancy"] = o.wavefrontSecs / (exec * float64(cus*wavefrontSlotsPerCU))
		if len(simds) > 0 {
			busy := 0.0
			for _, t := range simds {
				busy += float64(t.BusyTime())
			}
			m["simd_busy"] = busy / float64(len(simds)) / exec
		}
	}
	if launches := len(k.spans); launches > 0 {
		m["work_groups_per_launch"] = float64(o.workGroups) / float64(launches)
	}
}
