package main

// Tracers that turn MGPUSim's task traces into the metrics an architect
// reads: each kernel's execution at the command processor (without the
// driver's PCIe launch round trip), the work-groups the CUs received and
// how full their wavefront slots were, the SIMDs' busy time and the TLBs'
// hit rates.

import (
	"sync"

	"gitlab.com/akita/akita/v3/sim"
	"gitlab.com/akita/akita/v3/tracing"
	"gitlab.com/akita/mgpusim/v3/insts"
	"gitlab.com/akita/mgpusim/v3/protocol"
	"gitlab.com/akita/mgpusim/v3/samples/runner"
	"gitlab.com/akita/mgpusim/v3/timing/cu"
)

// wavefrontSlotsPerCU is a GCN3 CU's wavefront capacity: 4 SIMDs x 10
// wavefronts (MGPUSim's CU builder).
const wavefrontSlotsPerCU = 40

// kernelSpan is one kernel's execution at the command processor.
type kernelSpan struct {
	Kernel int     `json:"kernel"` // 1-based index of its code object, in order of first launch
	Start  float64 `json:"start_s"`
	End    float64 `json:"end_s"`
}

// kernelTracer records every kernel launch request the command processor
// receives, from receipt to completion.
type kernelTracer struct {
	sync.Mutex
	clock sim.TimeTeller
	open  map[string]kernelSpan
	codes map[*insts.HsaCo]int
	spans []kernelSpan
}

func newKernelTracer(clock sim.TimeTeller) *kernelTracer {
	return &kernelTracer{clock: clock, open: map[string]kernelSpan{}, codes: map[*insts.HsaCo]int{}}
}

func (t *kernelTracer) StartTask(task tracing.Task) {
	req, ok := task.Detail.(*protocol.LaunchKernelReq)
	if !ok || task.Kind != "req_in" {
		return
	}
	t.Lock()
	defer t.Unlock()
	code, seen := t.codes[req.HsaCo]
	if !seen {
		code = len(t.codes) + 1
		t.codes[req.HsaCo] = code
	}
	t.open[task.ID] = kernelSpan{Kernel: code, Start: float64(t.clock.CurrentTime())}
}

func (t *kernelTracer) StepTask(tracing.Task) {}

func (t *kernelTracer) EndTask(task tracing.Task) {
	t.Lock()
	defer t.Unlock()
	span, ok := t.open[task.ID]
	if !ok {
		return
	}
	delete(t.open, task.ID)
	span.End = float64(t.clock.CurrentTime())
	t.spans = append(t.spans, span)
}

// execSeconds is the time at least one kernel was executing.
func (t *kernelTracer) execSeconds() float64 {
	total, reach := 0.0, 0.0
	for _, s := range t.spans { // spans end in order; kernels of one queue do not overlap
		start := s.Start
		if start < reach {
			start = reach
		}
		if s.End > start {
			total += s.End - start
			reach = s.End
		}
	}
	return total
}

// perCode sums the execution time of each code object's launches.
func (t *kernelTracer) perCode() map[int]float64 {
	out := map[int]float64{}
	for _, s := range t.spans {
		out[s.Kernel] += s.End - s.Start
	}
	return out
}

// occupancyTracer counts the work-groups the CUs receive and integrates
// the wavefronts resident on them over time.
type occupancyTracer struct {
	sync.Mutex
	clock         sim.TimeTeller
	open          map[string]float64
	workGroups    uint64
	wavefronts    uint64
	wavefrontSecs float64
}

func newOccupancyTracer(clock sim.TimeTeller) *occupancyTracer {
	return &occupancyTracer{clock: clock, open: map[string]float64{}}
}

func (t *occupancyTracer) StartTask(task tracing.Task) {
	switch {
	case task.Kind == "req_in":
		if _, ok := task.Detail.(*protocol.MapWGReq); ok {
			t.Lock()
			t.workGroups++
			t.Unlock()
		}
	case task.Kind == "wavefront":
		t.Lock()
		t.wavefronts++
		t.open[task.ID] = float64(t.clock.CurrentTime())
		t.Unlock()
	}
}

func (t *occupancyTracer) StepTask(tracing.Task) {}

func (t *occupancyTracer) EndTask(task tracing.Task) {
	t.Lock()
	defer t.Unlock()
	start, ok := t.open[task.ID]
	if !ok {
		return
	}
	delete(t.open, task.ID)
	t.wavefrontSecs += float64(t.clock.CurrentTime()) - start
}

// tlbStats sums hits, misses and MSHR hits over a level's TLBs.
func tlbStats(tracers []*tracing.StepCountTracer) (hits, misses, mshrHits uint64) {
	for _, t := range tracers {
		hits += t.GetStepCount("hit")
		misses += t.GetStepCount("miss")
		mshrHits += t.GetStepCount("mshr-hit")
	}
	return
}

func watchAll(components []runner.TraceableComponent) []*tracing.StepCountTracer {
	out := make([]*tracing.StepCountTracer, 0, len(components))
	for _, c := range components {
		t := tracing.NewStepCountTracer(func(tracing.Task) bool { return true })
		tracing.CollectTrace(c, t)
		out = append(out, t)
	}
	return out
}

// busyTimes attaches one busy-time tracer per SIMD (its pipeline tasks).
func busyTimes(engine sim.Engine, simds []runner.TraceableComponent) []*tracing.BusyTimeTracer {
	out := make([]*tracing.BusyTimeTracer, 0, len(simds))
	for _, s := range simds {
		t := tracing.NewBusyTimeTracer(engine, func(task tracing.Task) bool { return task.Kind == "pipeline" })
		tracing.CollectTrace(s, t)
		out = append(out, t)
	}
	return out
}

// cpiStacks attaches MGPUSim's CPI-stack hook to every CU.
func cpiStacks(engine sim.Engine, cus []runner.TraceableComponent) []*cu.CPIStackTracer {
	out := make([]*cu.CPIStackTracer, 0, len(cus))
	for _, c := range cus {
		unit, ok := c.(*cu.ComputeUnit)
		if !ok {
			continue
		}
		h := cu.NewCPIStackInstHook(unit, engine)
		tracing.CollectTrace(unit, h)
		out = append(out, h)
	}
	return out
}

// meanCPIStack averages the CUs' CPI stacks (cycles per instruction by the
// highest-priority activity in flight: VALU, vector memory, LDS, idle, ...)
// over the CUs that executed instructions.
func meanCPIStack(hooks []*cu.CPIStackTracer) map[string]float64 {
	sum, n := map[string]float64{}, 0
	for _, h := range hooks {
		stack := h.GetCPIStack()
		total := stack["total"]
		if !(total > 0) || total != total || total > 1e300 {
			continue
		}
		n++
		for k, v := range stack {
			sum[k] += v
		}
	}
	for k := range sum {
		sum[k] /= float64(n)
	}
	return sum
}
