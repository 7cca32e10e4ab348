package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// pointFlags maps the design-point keys gpudse uses to the settings they set.
func pointFlags(c *config) map[string]*int {
	return map[string]*int{
		"cu_per_sa": &c.CUPerSA,
		"sa":        &c.NumSA,
		"l2_kb":     &c.L2KB,
		"mem_banks": &c.MemBanks,
		"line":      &c.LineBytes,
		"freq_mhz":  &c.FreqMHz,
	}
}

// checkPoints validates design points given as JSON objects, one a line,
// each on top of base, without simulating. It prints one line per invalid
// point ("line N: reason") and returns how many were invalid.
func checkPoints(r io.Reader, base config, w io.Writer) (int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	bad, line := 0, 0
	for sc.Scan() {
		line++
		if len(sc.Bytes()) == 0 {
			continue
		}
		c := base
		var point map[string]json.Number
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.UseNumber()
		err := dec.Decode(&point)
		if err == nil {
			err = applyPoint(&c, point)
		}
		if err == nil {
			err = validate(&c)
		}
		if err != nil {
			bad++
			fmt.Fprintf(w, "line %d: %v\n", line, err)
		}
	}
	return bad, sc.Err()
}

// applyPoint sets the design-point values on c.
func applyPoint(c *config, point map[string]json.Number) error {
	flags := pointFlags(c)
	for key, v := range point {
		dst, ok := flags[key]
		if !ok {
			return fmt.Errorf("unknown parameter %q", key)
		}
		n, err := v.Int64()
		if err != nil || n < -1<<31 || n > 1<<31-1 {
			f, ferr := v.Float64()
			if ferr != nil || f != float64(int64(f)) {
				return fmt.Errorf("%s=%s: must be a whole number", key, v)
			}
			n = int64(f)
		}
		*dst = int(n)
	}
	return nil
}

func runCheck(path string, base config) {
	f := os.Stdin
	if path != "-" {
		var err error
		f, err = os.Open(path)
		if err != nil {
			exitInvalid("-check: %v", err)
		}
		defer f.Close()
	}
	bad, err := checkPoints(f, base, os.Stdout)
	if err != nil {
		exitInvalid("-check: reading %s: %v", path, err)
	}
	if bad > 0 {
		os.Exit(2)
	}
}
